import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ThreadDO } from "../../src/object/thread-object";
import type { StatePage } from "../../src/thread/types";
import { newThread, stubOf, user } from "./support";

/**
 * Issue 11, finding 5: a thread past 32 MiB broke every state read (one RPC
 * returned the whole thread). A per-thread byte cap (MAX_THREAD_BYTES, 413
 * BEM-097 before anything is stored) and paged state/history reads.
 */
describe("thread byte cap and paged reads", () => {
  it("a write past MAX_THREAD_BYTES (lowered) is BEM-097 and stores nothing", async () => {
    const t = newThread();
    await t.appendMessages([user("one")], "input");
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const name = { tenant: t.tenant, threadId: t.threadId };
      const small = new ThreadDO(state, { ...env, MAX_THREAD_BYTES: "6000" });
      expect(await small.write({ ops: [{ op: "append", messages: [user("a".repeat(2000))] }] }, "input", name)).toMatchObject({ ok: true });
      const full = small.getState();
      const history = small.getHistory({ limit: 100 });
      expect(await small.write({ ops: [{ op: "append", messages: [user("b".repeat(2000)), user("c".repeat(2000))] }] }, "input", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-097" },
      });
      expect(await small.write({ ops: [{ op: "set", channel: "notes", value: "d".repeat(5000) }] }, "update", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-097" },
      });
      expect(small.getState()).toEqual(full);
      expect(small.getHistory({ limit: 100 })).toEqual(history);
      // Making room in the same update is fine.
      expect(await small.write({ ops: [{ op: "remove_all" }, { op: "append", messages: [user("e".repeat(4000))] }] }, "input", name)).toMatchObject({
        ok: true,
      });
    });
  });

  it("the thread client surfaces it as AppError BEM-097 (413)", async () => {
    const t = newThread();
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const name = { tenant: t.tenant, threadId: t.threadId };
      const small = new ThreadDO(state, { ...env, MAX_THREAD_BYTES: "100" });
      expect(await small.write({ ops: [{ op: "append", messages: [user("x".repeat(200))] }] }, "input", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-097" },
      });
    });
    expect(Number(env.MAX_THREAD_BYTES)).toBe(16 * 1024 * 1024); // the documented default in wrangler.toml
  });

  it("state reads are paged: no single RPC carries the whole of a big thread; the client reassembles it", async () => {
    const t = newThread();
    const chunk = "m".repeat(900_000);
    for (let i = 0; i < 6; i++) await t.appendMessages([user(`${i}:${chunk}`)], "input");
    const first = (await stubOf(t).getState(null)) as unknown as { ok: true; value: StatePage };
    expect(first.ok).toBe(true);
    expect(first.value.next_offset).not.toBeNull();
    expect(JSON.stringify(first.value).length).toBeLessThan(4.5 * 1024 * 1024);
    const whole = await t.getState();
    expect(whole.channels.messages.map((m) => String(m.content).split(":")[0])).toEqual(["0", "1", "2", "3", "4", "5"]);
    expect("next_offset" in whole).toBe(false);
    // An old checkpoint pages the same way.
    const cp = (await t.getHistory({ limit: 2 })).checkpoints[1]!.id;
    expect((await t.getState(cp)).channels.messages).toHaveLength(5);
  });

  it("history pages end at a byte budget too", async () => {
    const t = newThread();
    const chunk = "h".repeat(900_000);
    for (let i = 0; i < 11; i++) await t.appendMessages([user(`${i}:${chunk}`)], "input");
    const page = await t.getHistory({ limit: 100 });
    expect(page.checkpoints.length).toBeLessThan(11);
    expect(page.next_before).not.toBeNull();
    const rest = await t.getHistory({ limit: 100, before: page.next_before! });
    expect(page.checkpoints.length + rest.checkpoints.length).toBe(11);
  });
});
