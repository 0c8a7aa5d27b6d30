/**
 * Issue 11, finding 12: one principal's slow runs could hold a thread indefinitely (each run
 * renews its lease while it runs) and push everyone else to 409 with no hint of when to retry.
 * A run now holds its thread for at most MAX_RUN_LEASE_MS (renewals never pass it), and BEM-038
 * carries Retry-After: the seconds until the holder must let go at the latest.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AppError } from "../../src/core/errors";
import { LEASE, type Lease, RunLeases } from "../../src/thread/run-lease";
import { ThreadDO } from "../../src/object/thread-object";
import { newThread, stubOf } from "./support";

function memoryStore() {
  let saved: Lease | null = null;
  return { load: () => saved, save: (l: Lease | null) => void (saved = l) };
}

describe("run lease bound and Retry-After", () => {
  it("a holder that keeps renewing loses the lease at its hard bound; the waiter gets it then", async () => {
    let now = 1_000;
    const leases = new RunLeases(memoryStore(), () => now, 1_000);
    const holder = leases.acquire(300, 0) as Lease;
    expect(holder.until).toBe(2_000);
    const waiter = leases.acquire(300, 10_000) as Promise<Lease | null>;
    // Renewing every 100 ms, as ThreadClient does for a slow run.
    for (now = 1_100; now < 2_000; now += 100) expect(leases.renew(holder.token, 300)?.expires_at).toBe(Math.min(now + 300, 2_000));
    expect(leases.retryAfterSeconds()).toBe(1);
    now = 2_000;
    expect(leases.live()).toBeNull();
    expect(leases.renew(holder.token, 300)).toBeNull();
    expect(leases.admits(holder.token)).toBe(false); // hands the thread to the waiter
    const next = await waiter;
    expect(next).not.toBeNull();
    expect(next!.token).not.toBe(holder.token);
  });

  it("a local lease (a run inside the object) is never stored and lasts to its hard bound without renewal; an RPC lease is stored", () => {
    let now = 1_000;
    const store = memoryStore();
    const leases = new RunLeases(store, () => now, 10_000);
    const local = leases.acquire(300, 0, true) as Lease;
    expect(store.load()).toBeNull();
    now = 5_000; // far past its ttl: still held, nobody renewed it
    expect(leases.live()?.token).toBe(local.token);
    expect(leases.admits(undefined)).toBe(false);
    const waiter = leases.acquire(300, 60_000) as Promise<Lease | null>;
    expect(leases.release(local.token)).toBe(true); // hands the thread to the waiter at once
    return waiter.then((next) => {
      // The waiter asked over RPC: its lease is stored (it must survive eviction) and lapses at its ttl.
      expect(store.load()?.token).toBe(next!.token);
      expect(next!.expires_at).toBe(now + 300);
      now += 301;
      expect(leases.live()).toBeNull();
      // A new instance (after a restart) sees only stored leases: none held by a local run.
      const local2 = leases.acquire(300, 0, true) as Lease;
      expect(new RunLeases(store, () => now, 10_000).live()).toBeNull();
      expect(leases.release(local2.token)).toBe(true);
    });
  });

  it("the default bound is LEASE.defaultMaxHoldMs (120 s) and wrangler.toml says the same", () => {
    const leases = new RunLeases(memoryStore(), () => 0);
    expect((leases.acquire(30_000, 0) as Lease).until).toBe(LEASE.defaultMaxHoldMs);
    expect(Number(env.MAX_RUN_LEASE_MS)).toBe(LEASE.defaultMaxHoldMs);
  });

  it("BEM-038 from the object says when to retry (MAX_RUN_LEASE_MS lowered)", async () => {
    const t = newThread();
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const bounded = new ThreadDO(state, { ...env, MAX_RUN_LEASE_MS: "5000" });
      const first = await bounded.beginRun({ ttlMs: 30_000 });
      expect(first.ok).toBe(true);
      const second = await bounded.beginRun({ waitMs: 20 });
      expect(second).toMatchObject({ ok: false, error: { code: "BEM-038", retry_after: 5 } });
      const write = bounded.update({ ops: [{ op: "set", channel: "x", value: 1 }] }, "update");
      expect(write).toMatchObject({ ok: false, error: { code: "BEM-038" } });
    });
  });

  it("the thread client turns it into a 409 with a Retry-After header", async () => {
    const t = newThread();
    const run = await t.beginRun();
    try {
      const err = await t.beginRun({ waitMs: 20 }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AppError);
      const e = err as AppError;
      expect([e.code, e.status]).toEqual(["BEM-038", 409]);
      const after = Number(e.headers?.["retry-after"]);
      expect(after).toBeGreaterThanOrEqual(119);
      expect(after).toBeLessThanOrEqual(120);
    } finally {
      await run.end();
    }
  });
});
