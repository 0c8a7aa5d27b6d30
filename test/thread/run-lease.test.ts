/**
 * The run lease in the thread object (real DO storage): one run at a time per
 * thread, waiters served in arrival order, writes from elsewhere queued behind
 * the holder, release on save or on failure, expiry of a holder that died,
 * renewal of a long one, and a lease that survives eviction.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ThreadClient, HeldLease } from "../../src/thread/client";
import type { ThreadDO } from "../../src/object/thread-object";
import type { RpcResult, LeaseGrant } from "../../src/thread/types";
import { codeOf, newThread, stubOf, user } from "./support";

const BIG = 1_000_000;

async function status(t: ThreadClient) {
  const r = await stubOf(t).runStatus();
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

/** Polls the object until `n` calls wait behind the holder (so arrival order is known, not assumed). */
async function untilWaiting(t: ThreadClient, n: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await status(t)).waiting === n) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never saw ${n} waiting`);
}

/** A raw grant straight from the object: nobody renews or releases it, like a worker that crashed mid-run. */
async function rawGrant(t: ThreadClient, ttlMs: number) {
  const r = (await stubOf(t).beginRun({ ttlMs })) as RpcResult<LeaseGrant>;
  if (!r.ok) throw new Error(r.error.message);
  return r.value.lease;
}

const contents = async (t: ThreadClient) => (await t.getState()).channels.messages.map((m) => m.content);

describe("run lease", () => {
  it("a free thread grants at once, with the newest window read under the lease", async () => {
    const t = newThread();
    await t.appendMessages([user("a"), user("b")], "input");
    const run = await t.beginRun({ recentTokens: BIG });
    expect(run.recent?.messages.map((m) => m.content)).toEqual(["a", "b"]);
    expect((await status(t)).lease?.token).toBe(run.token);
    await t.appendMessages([user("c")], "input", { run, endRun: true });
    expect(await status(t)).toEqual({ lease: null, waiting: 0 });
    await run.end(); // already released by the save: a no-op
    expect(await contents(t)).toEqual(["a", "b", "c"]);
  });

  it("waiters get the thread in arrival order, each seeing every turn saved before it", async () => {
    const t = newThread();
    const holder = await t.beginRun({ recentTokens: BIG });
    const runs: Promise<number>[] = [];
    for (let i = 0; i < 6; i++) {
      runs.push(
        (async () => {
          const run = await t.beginRun({ recentTokens: BIG });
          const seen = run.recent!.messages.length;
          await t.appendMessages([user(`w${i}`), { role: "assistant", content: `r${i}` }], "input", { run, endRun: true });
          return seen;
        })(),
      );
      await untilWaiting(t, i + 1);
    }
    await t.appendMessages([user("h"), { role: "assistant", content: "rh" }], "input", { run: holder, endRun: true });
    expect(await Promise.all(runs)).toEqual([2, 4, 6, 8, 10, 12]);
    expect(await contents(t)).toEqual(["h", "rh", ...[0, 1, 2, 3, 4, 5].flatMap((i) => [`w${i}`, `r${i}`])]);
    expect(await status(t)).toEqual({ lease: null, waiting: 0 });
  });

  it("busy past the wait bound: BEM-038 (409), and the holder is untouched", async () => {
    const t = newThread();
    const holder = await t.beginRun();
    const t0 = Date.now();
    const err = await t.beginRun({ waitMs: 80 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "AppError", code: "BEM-038", status: 409 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(70);
    expect(await codeOf(t.beginRun({ waitMs: 0 }))).toBe("BEM-038");
    expect((await status(t)).lease?.token).toBe(holder.token);
    await holder.end();
    expect((await status(t)).lease).toBeNull();
  });

  it("a run that ends without saving (failure) hands the thread on at once", async () => {
    const t = newThread();
    const failed = await t.beginRun();
    const next = t.beginRun({ recentTokens: BIG, waitMs: 5_000 });
    await untilWaiting(t, 1);
    await failed.end();
    const run = await next;
    expect(run.recent?.messages).toEqual([]);
    await run.end();
    // Free again: no wait at all.
    await (await t.beginRun({ waitMs: 0 })).end();
  });

  it("writes without the token (admin repair, tasks) queue behind the running turn; in-object update refuses at once", async () => {
    const t = newThread();
    const run = await t.beginRun();
    const repair = t.appendMessages([user("repair")], "update");
    await untilWaiting(t, 1);
    expect(await contents(t)).toEqual([]);
    await runInDurableObject(stubOf(t), (o: ThreadDO) => {
      expect(o.update({ ops: [{ op: "append", messages: [user("x")] }] }, "update")).toMatchObject({ ok: false, error: { code: "BEM-038" } });
      expect(o.update({ ops: [{ op: "append", messages: [user("x")] }] }, "update", { token: "not-the-token" })).toMatchObject({
        ok: false,
        error: { code: "BEM-038" },
      });
    });
    await t.appendMessages([user("turn")], "input", { run, endRun: true });
    await repair;
    expect(await contents(t)).toEqual(["turn", "repair"]);
  });

  it("a failed save keeps the lease (nothing applied), so the run can still end it", async () => {
    const t = newThread();
    const run = await t.beginRun();
    expect(await codeOf(t.update([{ op: "remove", id: "missing" }], "input", { run, endRun: true }))).toBe("BEM-031");
    expect((await status(t)).lease?.token).toBe(run.token);
    await run.end();
    expect((await status(t)).lease).toBeNull();
  });

  it("delete waits for the running turn to save, then removes it too", async () => {
    const t = newThread();
    await t.appendMessages([user("old")], "input");
    const run = await t.beginRun();
    const deleting = t.destroy();
    await untilWaiting(t, 1);
    await t.appendMessages([user("last")], "input", { run, endRun: true });
    await deleting;
    expect(await contents(t)).toEqual([]);
    expect(await status(t)).toEqual({ lease: null, waiting: 0 });
  });

  it("a holder that died (no release, no renewal) loses the lease at expiry; its late save still lands, in turn", async () => {
    const t = newThread();
    const stub = stubOf(t);
    const crashed = await rawGrant(t, 200);
    const next = await t.beginRun({ recentTokens: BIG, waitMs: 5_000 });
    // Granted only once the dead holder's lease had expired (measured against its expiry, not the time this
    // test began waiting: a loaded machine may stall between the two calls).
    expect(Date.now()).toBeGreaterThanOrEqual(crashed.expires_at);
    expect(next.token).not.toBe(crashed.token);
    // The stale token no longer admits its write: it waits behind the new holder instead of interleaving.
    const late = stub.write({ ops: [{ op: "append", messages: [user("late")] }] }, "input", { token: crashed.token, endRun: true });
    await untilWaiting(t, 1);
    await t.appendMessages([user("next")], "input", { run: next, endRun: true });
    expect(await late).toMatchObject({ ok: true });
    expect(await contents(t)).toEqual(["next", "late"]);
    expect(await stub.endRun(crashed.token)).toEqual({ ok: true, value: false });
    expect(await status(t)).toEqual({ lease: null, waiting: 0 });
  });

  it("a long run keeps its lease by renewal; a waiter times out instead of overtaking it", async () => {
    const t = newThread();
    // A ttl long enough that a loaded CI machine's timer stalls (hundreds of ms) do not skip every renewal in one ttl.
    const run: HeldLease = await t.beginRun({ ttlMs: 500 });
    await new Promise((r) => setTimeout(r, 1_600)); // more than three ttls
    expect((await status(t)).lease?.token).toBe(run.token);
    expect(await codeOf(t.beginRun({ waitMs: 100 }))).toBe("BEM-038");
    await run.end();
    expect((await status(t)).lease).toBeNull();
  });

  it("eviction keeps the lease (it is stored): new runs still wait, the holder's save still releases it", async () => {
    const t = newThread();
    await t.appendMessages([user("before")], "input");
    const run = await t.beginRun({ recentTokens: BIG });
    await evictDurableObject(stubOf(t));
    expect((await status(t)).lease?.token).toBe(run.token);
    expect(await codeOf(t.beginRun({ waitMs: 0 }))).toBe("BEM-038");
    await t.appendMessages([user("during")], "input", { run, endRun: true });
    expect(await status(t)).toEqual({ lease: null, waiting: 0 });
    const after = await t.beginRun({ recentTokens: BIG, waitMs: 0 });
    expect(after.recent?.messages.map((m) => m.content)).toEqual(["before", "during"]);
    await after.end();
  });

  it("ttl and wait are clamped, so a caller cannot pin a thread for long", async () => {
    const t = newThread();
    const lease = await rawGrant(t, 10 ** 12);
    expect(lease.expires_at - Date.now()).toBeLessThanOrEqual(300_000 + 1_000);
    expect(await stubOf(t).endRun(lease.token)).toEqual({ ok: true, value: true });
  });
});
