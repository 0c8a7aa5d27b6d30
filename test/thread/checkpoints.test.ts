import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ThreadState } from "../../src/thread/types";
import { assistant, codeOf, newThread, stubOf, user } from "./support";

describe("checkpoints", () => {
  it("history is newest first, paged with next_before, and links parents", async () => {
    const t = newThread();
    const made = [];
    for (let i = 0; i < 7; i++) made.push(await t.appendMessages([user(`m${i}`)], "input"));
    const seen = [];
    let before: string | undefined;
    for (;;) {
      const page = await t.getHistory({ limit: 3, before });
      expect(page.checkpoints.length).toBeLessThanOrEqual(3);
      seen.push(...page.checkpoints);
      if (!page.next_before) break;
      before = page.next_before;
    }
    expect(seen.map((c) => c.id)).toEqual(made.map((c) => c.id).reverse());
    expect(seen.map((c) => c.step)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(seen.map((c) => c.is_head)).toEqual([true, false, false, false, false, false, false]);
    for (let i = 0; i < seen.length - 1; i++) expect(seen[i]!.parent_id).toBe(seen[i + 1]!.id);
    expect(seen.at(-1)!.parent_id).toBeNull();
    // Each checkpoint carries only its own delta.
    expect(seen.map((c) => c.writes.length)).toEqual([1, 1, 1, 1, 1, 1, 1]);
  });

  it("state at an old checkpoint equals what getState returned then", async () => {
    const t = newThread();
    const snapshots: ThreadState[] = [];
    await t.appendMessages([user("a", "a"), assistant("b", "b")], "input");
    snapshots.push(await t.getState());
    await t.update(
      [
        { op: "set", channel: "todo", reducer: "append", value: [1] },
        { op: "replace", message: assistant("B", "b") },
      ],
      "loop",
    );
    snapshots.push(await t.getState());
    await t.update(
      [
        { op: "remove", id: "a" },
        { op: "set", channel: "prefs", reducer: "merge", value: { x: 1 } },
      ],
      "update",
    );
    snapshots.push(await t.getState());
    await t.update([{ op: "remove_all" }, { op: "append", messages: [user("c")] }, { op: "set", channel: "todo", value: [2] }], "update");
    snapshots.push(await t.getState());
    for (const snap of snapshots) {
      expect(await t.getState(snap.checkpoint_id!)).toEqual(snap);
    }
  });

  it("an unknown checkpoint is BEM-032", async () => {
    const t = newThread();
    await t.appendMessages([user("a")], "input");
    expect(await codeOf(t.getState("0000000000000000NOPE"))).toBe("BEM-032");
    expect(await codeOf(t.fork("0000000000000000NOPE"))).toBe("BEM-032");
  });

  it("fork continues from an old checkpoint on a new branch and leaves the original intact", async () => {
    const t = newThread();
    const c1 = await t.appendMessages([user("q1"), assistant("a1")], "input");
    await t.update([{ op: "set", channel: "topic", value: "first" }], "loop");
    const c3 = await t.appendMessages([user("q2"), assistant("a2")], "input");
    const original = await t.getState();

    const f = await t.fork(c1.id);
    expect(f).toMatchObject({ parent_id: c1.id, step: c1.step + 1, source: "fork", writes: [] });
    const afterFork = await t.getState();
    expect(afterFork.checkpoint_id).toBe(f.id);
    expect(afterFork.channels.messages.map((m) => m.content)).toEqual(["q1", "a1"]);
    expect(afterFork.channels.topic).toBeUndefined();

    const c5 = await t.appendMessages([user("q2'"), assistant("a2'")], "input");
    expect(c5.parent_id).toBe(f.id);
    expect((await t.getState()).channels.messages.map((m) => m.content)).toEqual(["q1", "a1", "q2'", "a2'"]);

    // The old branch is still readable, unchanged, and listed in history.
    expect(await t.getState(c3.id)).toEqual(original);
    const ids = (await t.getHistory({ limit: 100 })).checkpoints.map((c) => [c.id, c.is_head]);
    expect(ids).toEqual([[c5.id, true], [f.id, false], [c3.id, false], expect.any(Array), [c1.id, false]]);

    // And we can go back to it.
    await t.fork(c3.id);
    const back = await t.getState();
    expect(back.channels).toEqual(original.channels);
  });

  it("evicting the object between turns loses nothing (ids keep increasing)", async () => {
    const t = newThread();
    const c1 = await t.appendMessages([user("one"), assistant("two")], "input");
    await t.update([{ op: "set", channel: "k", reducer: "merge", value: { a: 1 } }], "loop");
    const before = await t.getState();
    await evictDurableObject(stubOf(t));
    expect(await t.getState()).toEqual(before);
    const c3 = await t.appendMessages([user("three")], "input");
    expect(c3.step).toBe(3);
    expect(c3.id > c1.id).toBe(true);
    await evictDurableObject(stubOf(t));
    const s = await t.getState();
    expect(s.channels.messages.map((m) => m.content)).toEqual(["one", "two", "three"]);
    expect(s.channels.k).toEqual({ a: 1 });
    expect(s.checkpoint_id).toBe(c3.id);
    const ids = s.channels.messages.map((m) => m.id);
    expect([...ids].sort()).toEqual(ids);
  });

  it("destroy deletes everything; the thread starts over empty", async () => {
    const t = newThread();
    await t.appendMessages([user("one")], "input");
    await t.destroy();
    expect(await t.getState()).toMatchObject({ checkpoint_id: null, step: 0, channels: { messages: [] } });
    expect((await t.getHistory()).checkpoints).toEqual([]);
    const cp = await t.appendMessages([user("again")], "input");
    expect(cp).toMatchObject({ step: 1, parent_id: null });
  });
});
