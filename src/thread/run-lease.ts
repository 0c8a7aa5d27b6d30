import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";

/**
 * A run's exclusive hold on one thread. The token proves the holder when it
 * saves; `expires_at` bounds how long a holder that died can block the thread,
 * and `until` how long a live one can (renewals never pass it: MAX_RUN_LEASE_MS).
 */
export const Lease = z.object({ token: z.string().min(1), expires_at: z.number().int(), until: z.number().int().optional() });
export type Lease = z.infer<typeof Lease>;

export const LEASE = {
  /** A holder renews well before this (ThreadClient does, every third of it). */
  defaultTtlMs: 30_000,
  minTtlMs: 50,
  maxTtlMs: 300_000,
  /** How long a caller queues behind the holder before a coded 409 (BEM-038). */
  defaultWaitMs: 30_000,
  maxWaitMs: 60_000,
  /** Callers beyond this many in the queue are refused at once instead of held open. */
  maxWaiters: 1_000,
  /**
   * The longest one run holds the thread, renewals included (MAX_RUN_LEASE_MS overrides it).
   * A slower run keeps running, but its lease lapses: the next run starts, and the slow run's
   * save queues behind it like any write without a lease.
   */
  defaultMaxHoldMs: 120_000,
} as const;

export const clampTtl = (ms: number | undefined) => clamp(ms ?? LEASE.defaultTtlMs, LEASE.minTtlMs, LEASE.maxTtlMs);
export const clampWait = (ms: number | undefined) => clamp(ms ?? LEASE.defaultWaitMs, 0, LEASE.maxWaitMs);

function clamp(n: number, lo: number, hi: number): number {
  return Number.isFinite(n) ? Math.min(Math.max(Math.trunc(n), lo), hi) : lo;
}

/** Where the live lease is kept so that an evicted and restarted object still honours it. */
export interface LeaseStore {
  load(): Lease | null;
  save(lease: Lease | null): void;
}

type Waiter = { ttlMs: number; local: boolean; settle: (lease: Lease | null) => void; timer: ReturnType<typeof setTimeout> };

/**
 * One thread's run lease and its queue, inside the thread's Durable Object.
 * At most one holder at a time; callers that find it held wait in arrival
 * order and are handed the lease directly on release or expiry (no barging,
 * so the order runs start in is the order they were accepted in).
 *
 * A lease held over RPC (a caller elsewhere) is mirrored in storage, so it survives
 * eviction, and lapses at its ttl unless renewed. A lease taken by a run executing
 * inside this object (`local`) is kept in memory only and needs no renewal: that run
 * lives exactly as long as this instance does, so a restart ends both (its hard bound,
 * `until`, still applies). The waiters are in-flight calls and do not survive eviction
 * (their callers see the call fail).
 */
export class RunLeases {
  #lease: Lease | null;
  /** The current lease belongs to a run inside this object: not in storage. */
  #local = false;
  readonly #waiters: Waiter[] = [];
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly store: LeaseStore,
    private readonly now: () => number = Date.now,
    private readonly maxHoldMs: number = LEASE.defaultMaxHoldMs,
  ) {
    this.#lease = store.load();
  }

  /** The lease if it is still live (one past its expiry counts as released). */
  live(): Lease | null {
    return this.#lease && this.#lease.expires_at > this.now() ? this.#lease : null;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Seconds until the thread's current holder must let go at the latest (its hard bound, not
   * counting the callers queued behind it): what a refused caller hears as Retry-After. At least 1.
   */
  retryAfterSeconds(): number {
    const live = this.live();
    const end = live ? (live.until ?? live.expires_at) : this.now();
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
  acquire(ttlMs: number, waitMs: number, local = false): Lease | null | Promise<Lease | null> {
    this.#settleExpired();
    if (!this.live() && this.#waiters.length === 0) return this.#grant(ttlMs, local);
    if (waitMs <= 0 || this.#waiters.length >= LEASE.maxWaiters) return null;
    return new Promise<Lease | null>((settle) => {
      const waiter: Waiter = {
        ttlMs,
        local,
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
  async take(ttlMs: number, waitMs: number, local = false): Promise<Lease> {
    const pending = this.acquire(ttlMs, waitMs, local);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) throw this.busy(waitMs);
    return lease;
  }

  /**
   * Runs a write now when `token` holds the lease or nobody holds or awaits it (no extra
   * work on a free thread); otherwise queues it as a one-write run behind the others (a
   * stale token from a holder whose lease expired counts as none: its write still lands,
   * in turn). BEM-038 past the default wait.
   */
  async exclusive<T>(token: string | undefined, write: () => T): Promise<T> {
    if (this.admits(token)) return write();
    const lease = await this.take(clampTtl(undefined), clampWait(undefined));
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

  /** Extends the holder's lease; false when `token` no longer holds it. */
  renew(token: string, ttlMs: number): Lease | null {
    const live = this.live();
    if (!live || live.token !== token) return null;
    // Never past the run's hard bound: a slow run cannot hold the thread longer by renewing.
    this.#lease = { ...live, expires_at: Math.min(this.now() + ttlMs, live.until ?? Number.MAX_SAFE_INTEGER) };
    if (!this.#local) this.store.save(this.#lease);
    this.#armExpiry();
    return this.#lease;
  }

  /** Ends the lease held by `token` and hands it to the next waiter; false for a token that lost it. */
  release(token: string): boolean {
    if (this.#lease?.token !== token) return false;
    this.#clear();
    this.#handOff();
    return true;
  }

  #grant(ttlMs: number, local: boolean): Lease {
    const until = this.now() + this.maxHoldMs;
    // A local run is alive while this instance is: only its hard bound ends its lease.
    const lease: Lease = { token: crypto.randomUUID(), expires_at: local ? until : Math.min(this.now() + ttlMs, until), until };
    this.#lease = lease;
    this.#local = local;
    if (!local) this.store.save(lease);
    this.#armExpiry();
    return lease;
  }

  #clear(): void {
    const stored = !this.#local;
    this.#lease = null;
    this.#local = false;
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    if (stored) this.store.save(null);
  }

  #handOff(): void {
    const next = this.#waiters.shift();
    if (!next) return;
    clearTimeout(next.timer);
    next.settle(this.#grant(next.ttlMs, next.local));
  }

  /** A holder that died never releases: once its lease is past expiry, the next waiter gets it. */
  #settleExpired(): void {
    if (this.#lease && !this.live()) {
      this.#clear();
      this.#handOff();
    }
  }

  /** Only waiters need the timer (a free thread checks expiry lazily), so an idle object holds none. */
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
      Math.max(0, lease.expires_at - this.now()) + 1,
    );
  }
}
