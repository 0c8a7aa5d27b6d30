import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ThreadClient } from "../../src/thread/client";
import { ThreadDO } from "../../src/object/thread-object";
import { codeOf, newThread, stubOf, unique, user } from "./support";

describe("rejected updates leave the thread unchanged", () => {
  it("bad thread ids are BEM-030", () => {
    for (const bad of ["", "has space", "a/b", "x".repeat(129), "é", "../x"]) {
      expect(() => new ThreadClient(env, "t", bad)).toThrowError(expect.objectContaining({ code: "BEM-030" }));
    }
    expect(new ThreadClient(env, "t", "Ok.id_1:part-2").threadId).toBe("Ok.id_1:part-2");
    expect(new ThreadClient(env, "t", "x".repeat(128)).threadId).toHaveLength(128);
  });

  it("bad ops are BEM-035, an unknown id BEM-031 even after valid ops in the same update", async () => {
    const t = newThread();
    await t.appendMessages([user("keep", "k")], "input");
    const before = await t.getState();
    const bad: unknown[][] = [
      [{ op: "explode" }],
      [{ op: "append", messages: [] }],
      [{ op: "append", messages: [{ role: "wizard", content: "x" }] }],
      [{ op: "append", messages: [{ role: "user", content: "x", id: "bad id" }] }],
      [{ op: "set", channel: "messages", value: [] }],
      [{ op: "set", channel: "x", value: 1, reducer: "sum" }],
      [],
    ];
    for (const ops of bad) expect(await codeOf(t.update(ops as never, "update"))).toBe("BEM-035");
    expect(await codeOf(t.update([{ op: "append", messages: [user("x")] }], "fork" as never))).toBe("BEM-035");
    expect(
      await codeOf(
        t.update(
          [
            { op: "append", messages: [user("lost")] },
            { op: "set", channel: "c", value: 1 },
            { op: "remove", id: "missing" },
          ],
          "update",
        ),
      ),
    ).toBe("BEM-031");
    expect(await t.getState()).toEqual(before);
    expect((await t.getHistory()).checkpoints).toHaveLength(1);
  });

  it("a message over MAX_MESSAGE_BYTES is BEM-033", async () => {
    const t = newThread();
    await t.appendMessages([user("keep")], "input");
    const before = await t.getState();
    const big = "x".repeat(Number(env.MAX_MESSAGE_BYTES));
    expect(await codeOf(t.appendMessages([user("fine"), user(big)], "input"))).toBe("BEM-033");
    expect(await t.getState()).toEqual(before);
  });

  it("configured limits: message bytes, channel bytes and thread message count", async () => {
    const t = newThread();
    await t.appendMessages([user("one")], "input");
    await runInDurableObject(stubOf(t), async (_live: ThreadDO, state) => {
      const name = { tenant: t.tenant, threadId: t.threadId };
      // A second instance over the same storage, with tiny limits.
      const small = new ThreadDO(state, { ...env, MAX_MESSAGE_BYTES: "300", MAX_THREAD_MESSAGES: "3" });
      const before = small.getState();
      expect(await small.write({ ops: [{ op: "append", messages: [user("y".repeat(300))] }] }, "input", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-033" },
      });
      expect(await small.write({ ops: [{ op: "set", channel: "log", reducer: "append", value: ["z".repeat(200)] }] }, "loop", name)).toMatchObject({
        ok: true,
      });
      expect(await small.write({ ops: [{ op: "set", channel: "log", value: ["z".repeat(200)] }] }, "loop", name)).toMatchObject({
        ok: false,
        error: { code: "BEM-033" },
      });
      expect(await small.write({ ops: [{ op: "append", messages: [user("2"), user("3")] }] }, "input", name)).toMatchObject({ ok: true });
      const full = small.getState();
      expect(await small.write({ ops: [{ op: "append", messages: [user("4")] }] }, "input", name)).toMatchObject({ ok: false, error: { code: "BEM-034" } });
      expect(small.getState()).toEqual(full);
      // Making room in the same update is fine.
      expect(await small.write({ ops: [{ op: "remove_all" }, { op: "append", messages: [user("a"), user("b"), user("c")] }] }, "input", name)).toMatchObject({
        ok: true,
      });
      expect(before).toMatchObject({ ok: true });
    });
  });

  it("RPC errors surface as AppError with code and message on the caller side", async () => {
    const t = new ThreadClient(env, unique("t"), unique("th"));
    await expect(t.update([{ op: "remove", id: "nope" }], "update")).rejects.toMatchObject({
      name: "AppError",
      code: "BEM-031",
      status: 404,
      message: expect.stringContaining("nope"),
    });
  });
});
