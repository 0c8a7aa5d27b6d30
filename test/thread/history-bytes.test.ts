import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ThreadDO } from "../../src/object/thread-object";
import { newThread, stubOf, user } from "./support";

/**
 * Issue 11, finding 12 (checkpoints per tenant): MAX_THREAD_BYTES counts only the live messages
 * and channels, so checkpoint history was unbounded — a channel set again and again stays small
 * while every write is kept. MAX_THREAD_HISTORY_BYTES bounds the stored writes: past it an update
 * is 413 BEM-019 and nothing is stored.
 */
describe("thread history byte cap", () => {
  it("rewriting one small channel cannot grow history past MAX_THREAD_HISTORY_BYTES (lowered)", async () => {
    const t = newThread();
    await t.appendMessages([user("one")], "input");
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const name = { tenant: t.tenant, threadId: t.threadId };
      const small = new ThreadDO(state, { ...env, MAX_THREAD_BYTES: "100000", MAX_THREAD_HISTORY_BYTES: "5000" });
      const set = (i: number) => small.write({ ops: [{ op: "set", channel: "notes", value: `${i}:${"n".repeat(1000)}` }] }, "update", name);
      let ok = 0;
      for (let i = 0; i < 10 && (await set(i)).ok; i++) ok++;
      expect(ok).toBe(4); // ~1 KB per write, a few hundred bytes for the first turn
      const before = { state: small.getState(), history: small.getHistory({ limit: 100 }) };
      expect(await set(99)).toMatchObject({ ok: false, error: { code: "BEM-019" } });
      expect(await small.write({ ops: [{ op: "append", messages: [user("x".repeat(2000))] }] }, "input", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-019" },
      });
      expect(small.getState()).toEqual(before.state);
      expect(small.getHistory({ limit: 100 })).toEqual(before.history);
      // The live thread is far below MAX_THREAD_BYTES: that cap alone would have let this grow forever.
      expect(JSON.stringify(before.state).length).toBeLessThan(3000);
    });
  });

  it("a thread older than the running total is summed once from its writes", async () => {
    const t = newThread();
    for (let i = 0; i < 3; i++) await t.appendMessages([user(`${i}:${"o".repeat(1000)}`)], "input");
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const name = { tenant: t.tenant, threadId: t.threadId };
      state.storage.sql.exec(`DELETE FROM meta WHERE key = 'history_bytes'`);
      const small = new ThreadDO(state, { ...env, MAX_THREAD_HISTORY_BYTES: "3500" });
      expect(await small.write({ ops: [{ op: "append", messages: [user("p".repeat(1000))] }] }, "input", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-019" },
      });
      const roomy = new ThreadDO(state, { ...env, MAX_THREAD_HISTORY_BYTES: "100000" });
      expect(await roomy.write({ ops: [{ op: "append", messages: [user("p".repeat(1000))] }] }, "input", name)).toMatchObject({ ok: true });
      const total = Number(state.storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'history_bytes'`).one().value);
      const summed = state.storage.sql.exec<{ b: number }>(`SELECT SUM(length(CAST(json AS BLOB))) AS b FROM writes`).one().b;
      expect(total).toBe(summed);
    });
    expect(Number(env.MAX_THREAD_HISTORY_BYTES)).toBe(64 * 1024 * 1024); // the documented default
  });
});
