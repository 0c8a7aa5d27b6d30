/**
 * Issue 11, finding 12: one principal's slow runs could hold a thread indefinitely (each run
 * renewed its lease while it ran) and push everyone else to 409 with no hint of when to retry.
 * A run now holds its thread for at most MAX_RUN_LEASE_MS, and BEM-038
 * carries Retry-After: the seconds until the holder must let go at the latest.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AppError } from "../../src/core/errors";
import { LEASE, type Lease, ThreadLeases } from "../../src/thread/thread-lease";
import { ThreadDO } from "../../src/object/thread-object";
import { newThread, stubOf } from "./support";

describe("run lease bound and Retry-After", () => {
  it("a holder loses the lease at its hard bound; the waiter gets it then", async () => {
    let now = 1_000;
    const leases = new ThreadLeases(() => now, 1_000);
    const holder = leases.acquire(0) as Lease;
    expect(holder.until).toBe(2_000);
    const waiter = leases.acquire(10_000) as Promise<Lease | null>;
    now = 1_500;
    expect(leases.live()?.token).toBe(holder.token);
    expect(leases.retryAfterSeconds()).toBe(1);
    now = 2_000;
    expect(leases.live()).toBeNull();
    expect(leases.admits(holder.token)).toBe(false); // hands the thread to the waiter
    const next = await waiter;
    expect(next).not.toBeNull();
    expect(next!.token).not.toBe(holder.token);
  });

  it("the default bound is LEASE.defaultMaxHoldMs (120 s) and wrangler.toml says the same", () => {
    const leases = new ThreadLeases(() => 0);
    expect((leases.acquire(0) as Lease).until).toBe(LEASE.defaultMaxHoldMs);
    expect(Number(env.MAX_RUN_LEASE_MS)).toBe(LEASE.defaultMaxHoldMs);
  });

  it("BEM-038 from the object says when to retry (MAX_RUN_LEASE_MS lowered)", async () => {
    const t = newThread();
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const bounded = new ThreadDO(state, { ...env, MAX_RUN_LEASE_MS: "5000" });
      await bounded.leases.take(0);
      const err = await bounded.leases.take(20).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AppError);
      const e = err as AppError;
      expect([e.code, e.status, e.headers?.["retry-after"]]).toEqual(["BEM-038", 409, "5"]);
    });
  });
});
