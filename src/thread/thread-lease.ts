import { AppError } from "../core/errors";

/** A run's exclusive hold on one thread: the token proves the holder when it saves; `until` is when it must let go. */
export type Lease = { token: string; until: number };

export const LEASE = {
  /** How long a caller queues behind the holder before a coded 409 (BEM-038). */
  defaultWaitMs: 30_000,
  /** Callers beyond this many in the queue are refused at once instead of held open. */
  maxWaiters: 1_000,
  /**
   * The longest one run holds the thread (MAX_RUN_LEASE_MS overrides it). A slower run keeps
   * running, but its lease lapses: the next run starts, and the slow run's save queues behind it.
   */
  defaultMaxHoldMs: 120_000,
} as const;

type Waiter = { settle: (lease: Lease | null) => void; timer: ReturnType<typeof setTimeout> };

/**
 * One thread's lease and its queue, inside the thread's Durable Object. At most one holder at a
 * time; callers that find it held wait in arrival order and are handed the lease directly on release
 * or at its bound (no barging, so runs start in the order they were accepted in).
 *
 * Every holder runs inside this object (a turn, a summary, a write, a delete), so the lease lives in
 * memory only: an eviction or restart ends the holder and its lease together, and the waiters are
 * in-flight calls that fail with it.
 */
export class ThreadLeases {
  #lease: Lease | null = null;
  readonly #waiters: Waiter[] = [];
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxHoldMs: number = LEASE.defaultMaxHoldMs,
  ) {}

  /** The lease if it is still live (one past its bound counts as released). */
  live(): Lease | null {
    return this.#lease && this.#lease.until > this.now() ? this.#lease : null;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Seconds until the current holder must let go at the latest: what a refused caller hears as Retry-After. At least 1. */
  retryAfterSeconds(): number {
    const end = this.live()?.until ?? this.now();
    return Math.max(1, Math.ceil((end - this.now()) / 1000));
  }

  /** Whether a write carrying `token` may apply now: it holds the live lease, or nobody holds or awaits it. */
  admits(token: string | undefined): boolean {
    this.#settleExpired();
    const live = this.live();
    if (live) return token !== undefined && live.token === token;
    return this.#waiters.length === 0;
  }

  /** A lease now when the thread is free; else a promise of one in turn, or of null after `waitMs`. */
  acquire(waitMs: number): Lease | null | Promise<Lease | null> {
    this.#settleExpired();
    if (!this.live() && this.#waiters.length === 0) return this.#grant();
    if (waitMs <= 0 || this.#waiters.length >= LEASE.maxWaiters) return null;
    return new Promise<Lease | null>((settle) => {
      const waiter: Waiter = {
        settle,
        timer: setTimeout(() => {
          const i = this.#waiters.indexOf(waiter);
          if (i >= 0) this.#waiters.splice(i, 1);
          this.#armExpiry(); // disarms when nobody waits any more
          settle(null);
        }, waitMs),
      };
      this.#waiters.push(waiter);
      this.#armExpiry();
    });
  }

  /** A lease in turn (FIFO), or BEM-038 saying when to retry once `waitMs` passes first. */
  async take(waitMs: number = LEASE.defaultWaitMs): Promise<Lease> {
    const pending = this.acquire(waitMs);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) throw this.busy(waitMs);
    return lease;
  }

  /**
   * Runs a write now when `token` holds the lease or nobody holds or awaits it (no extra work on a
   * free thread); otherwise queues it as a one-write run behind the others (a token whose lease
   * lapsed counts as none: its write still lands, in turn). BEM-038 past the default wait.
   */
  async exclusive<T>(token: string | undefined, write: () => T): Promise<T> {
    if (this.admits(token)) return write();
    const lease = await this.take();
    try {
      return write();
    } finally {
      this.release(lease.token);
    }
  }

  /** BEM-038, saying when to retry: when the holder's lease ends at the latest (MAX_RUN_LEASE_MS bounds it). */
  busy(waitMs: number): AppError {
    const retryAfter = this.retryAfterSeconds();
    return new AppError("BEM-038", `Thread is busy with another run; waited ${waitMs} ms (retry after ${retryAfter} s)`, {
      headers: { "retry-after": String(retryAfter) },
    });
  }

  /** Ends the lease held by `token` and hands it to the next waiter; false for a token that lost it. */
  release(token: string): boolean {
    if (this.#lease?.token !== token) return false;
    this.#clear();
    this.#handOff();
    return true;
  }

  #grant(): Lease {
    this.#lease = { token: crypto.randomUUID(), until: this.now() + this.maxHoldMs };
    this.#armExpiry();
    return this.#lease;
  }

  #clear(): void {
    this.#lease = null;
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
  }

  #handOff(): void {
    const next = this.#waiters.shift();
    if (!next) return;
    clearTimeout(next.timer);
    next.settle(this.#grant());
  }

  /** A holder past its bound no longer holds the thread: the next waiter gets it. */
  #settleExpired(): void {
    if (this.#lease && !this.live()) {
      this.#clear();
      this.#handOff();
    }
  }

  /** Only waiters need the timer (a free thread checks the bound lazily), so an idle object holds none. */
  #armExpiry(): void {
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    const lease = this.#lease;
    if (!lease || this.#waiters.length === 0) return;
    this.#expiryTimer = setTimeout(
      () => {
        this.#expiryTimer = undefined;
        if (this.#lease === lease) this.#settleExpired();
        if (this.#lease === lease) this.#armExpiry(); // the clock had not reached it yet
      },
      Math.max(0, lease.until - this.now()) + 1,
    );
  }
}
