/**
 * Time-sortable ids: 10 chars of milliseconds, 6 of a per-ms counter, 4 random,
 * all Crockford base32 (fixed width, so string order = time order). The counter
 * keeps ids strictly increasing within one millisecond and when the clock stalls
 * or steps back, which Workers clocks do (time only advances on I/O).
 */
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

function encode(n: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

function randomChars(width: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(width));
  let out = "";
  for (const b of bytes) out += ALPHABET[b % 32];
  return out;
}

const COUNTER_MAX = 32 ** 6 - 1;

export class IdGenerator {
  private ms = 0;
  private counter = 0;

  /** Continues after a previously persisted clock (see `clock`). */
  restore(clock: string | null | undefined): void {
    const [ms, counter] = (clock ?? "").split(":").map(Number);
    if (ms !== undefined && counter !== undefined && Number.isFinite(ms) && Number.isFinite(counter) && ms >= this.ms) {
      this.ms = ms;
      this.counter = counter;
    }
  }

  /** The state to persist so ids stay increasing after the object restarts. */
  get clock(): string {
    return `${this.ms}:${this.counter}`;
  }

  next(now = Date.now()): string {
    if (now > this.ms) {
      this.ms = now;
      this.counter = 0;
    } else if (this.counter < COUNTER_MAX) {
      this.counter++;
    } else {
      // Counter exhausted within one ms: borrow the next millisecond.
      this.ms++;
      this.counter = 0;
    }
    return encode(this.ms, 10) + encode(this.counter, 6) + randomChars(4);
  }
}
