/**
 * The run lease in the thread object (real DO storage): one holder at a time per thread, waiters
 * served in arrival order, writes from outside queued behind the holder, a holder that ends hands
 * the thread on at once, a delete waits its turn, and the lease lives in memory only, so an
 * eviction ends it with its holder.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ThreadDO } from "../../src/object/thread-object";
import type { Lease } from "../../src/thread/thread-lease";
import type { ThreadClient } from "../../src/thread/client";
import { codeOf, newThread, stubOf, user } from "./support";

const inObject = <T>(t: ThreadClient, fn: (o: ThreadDO) => T | Promise<T>) => runInDurableObject(stubOf(t), (o: ThreadDO) => fn(o));

/** Holds the thread inside its object, as a turn does, until the returned release is called. */
async function hold(t: ThreadClient): Promise<{ lease: Lease; release: () => Promise<boolean> }> {
  const lease = await inObject(t, (o) => o.leases.take(0));
  return { lease, release: () => inObject(t, (o) => o.leases.release(lease.token)) };
}

/** Polls the object until `n` calls wait behind the holder (so arrival order is known, not assumed). */
async function untilWaiting(t: ThreadClient, n: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await inObject(t, (o) => o.leases.waiting)) === n) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never saw ${n} waiting`);
}

const contents = async (t: ThreadClient) => (await t.getState()).channels.messages.map((m) => m.content);

describe("run lease", () => {
  it("writes from outside wait behind the holder and land in arrival order once it lets go", async () => {
    const t = newThread();
    const holder = await hold(t);
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 6; i++) {
      writes.push(t.appendMessages([user(`w${i}`)], "update"));
      await untilWaiting(t, i + 1);
    }
    expect(await contents(t)).toEqual([]);
    expect(await holder.release()).toBe(true);
    await Promise.all(writes);
    expect(await contents(t)).toEqual(["w0", "w1", "w2", "w3", "w4", "w5"]);
    expect(await inObject(t, (o) => [o.leases.live(), o.leases.waiting])).toEqual([null, 0]);
  });

  it("busy past the wait bound: BEM-038 (409) with Retry-After, and the holder is untouched", async () => {
    const t = newThread();
    const holder = await hold(t);
    await inObject(t, async (o) => {
      const t0 = Date.now();
      const err = await o.leases.take(80).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: "AppError", code: "BEM-038", status: 409, headers: { "retry-after": "120" } });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(70);
      expect(await codeOf(o.leases.take(0))).toBe("BEM-038");
      expect(o.leases.live()?.token).toBe(holder.lease.token);
    });
    await holder.release();
  });

  it("a holder that ends without saving (a failed run) hands the thread on at once", async () => {
    const t = newThread();
    const failed = await hold(t);
    const write = t.appendMessages([user("next")], "update");
    await untilWaiting(t, 1);
    await failed.release();
    await write;
    expect(await contents(t)).toEqual(["next"]);
    expect(await inObject(t, (o) => o.leases.live())).toBeNull();
  });

  it("a delete waits its turn behind the holder and the writes before it; a write after it starts the thread anew", async () => {
    const t = newThread();
    await t.appendMessages([user("old")], "input");
    const holder = await hold(t);
    const before = t.appendMessages([user("queued before the delete")], "update");
    await untilWaiting(t, 1);
    const deleting = t.destroy();
    await untilWaiting(t, 2);
    const after = t.appendMessages([user("after the delete")], "update");
    await untilWaiting(t, 3);
    await holder.release();
    await Promise.all([before, deleting, after]);
    expect(await contents(t)).toEqual(["after the delete"]);
  });

  it("the lease lives in memory only: an eviction ends it with its holder, and the next write goes through at once", async () => {
    const t = newThread();
    await t.appendMessages([user("before")], "input");
    await hold(t);
    await evictDurableObject(stubOf(t));
    expect(await inObject(t, (o) => o.leases.live())).toBeNull();
    await t.appendMessages([user("after")], "update");
    expect(await contents(t)).toEqual(["before", "after"]);
  });
});
