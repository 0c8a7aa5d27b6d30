/**
 * A timeout that only runs while we wait on the upstream: each `race` arms it
 * for that wait, so a slow consumer of a stream never trips it, while a
 * provider that stalls (before headers or between chunks) does. `signal`
 * aborts the underlying fetch on timeout or when the caller aborts.
 */
export class Deadline {
  #timedOut = false;
  readonly #ms: number;
  readonly #controller = new AbortController();

  constructor(ms: number, parent?: AbortSignal) {
    this.#ms = ms;
    if (parent?.aborted) this.#controller.abort(parent.reason);
    else parent?.addEventListener("abort", () => this.#controller.abort(parent.reason), { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get timedOut(): boolean {
    return this.#timedOut;
  }

  get ms(): number {
    return this.#ms;
  }

  /** Settles with `p`, or rejects when the timeout fires or the caller aborts first. */
  race<T>(p: Promise<T>): Promise<T> {
    const signal = this.#controller.signal;
    if (signal.aborted) {
      p.catch(() => undefined);
      return Promise.reject(signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        cleanup();
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        this.#timedOut = true;
        this.#controller.abort(new Error("upstream timeout"));
      }, this.#ms);
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      p.then(
        (v) => {
          cleanup();
          resolve(v);
        },
        (e: unknown) => {
          cleanup();
          reject(e);
        },
      );
    });
  }
}
