import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../src/core/tokens";
import { assistant, codeOf, newThread, user } from "./support";

const texts = (s: { channels: { messages: { content: unknown }[] } }) => s.channels.messages.map((m) => m.content);

describe("messages channel", () => {
  it("append assigns increasing time-sortable ids, created_at and stores the token estimate", async () => {
    const t = newThread();
    const cp = await t.appendMessages([user("hello"), assistant("hi there, how can I help?")], "input");
    const s = await t.getState();
    expect(texts(s)).toEqual(["hello", "hi there, how can I help?"]);
    const [a, b] = s.channels.messages;
    expect(a!.id < b!.id).toBe(true);
    expect(a!.created_at).toBeGreaterThan(0);
    expect(cp.writes.map((w) => (w.op === "put" ? w.message.id : null))).toEqual([a!.id, b!.id]);
    // Stored estimates drive loadRecent: a budget of exactly both estimates returns both, one less drops the older.
    const both = estimateTokens(a!) + estimateTokens(b!);
    expect((await t.loadRecent(both)).messages.map((m) => m.id)).toEqual([a!.id, b!.id]);
    expect((await t.loadRecent(both - 1)).messages.map((m) => m.id)).toEqual([b!.id]);
  });

  it("replace by id keeps the message's position and created_at", async () => {
    const t = newThread();
    await t.appendMessages([user("one", "m1"), assistant("two", "m2"), user("three", "m3")], "input");
    const before = await t.getState();
    await t.update([{ op: "replace", message: assistant("TWO", "m2") }], "update");
    const after = await t.getState();
    expect(after.channels.messages.map((m) => [m.id, m.content])).toEqual([
      ["m1", "one"],
      ["m2", "TWO"],
      ["m3", "three"],
    ]);
    expect(after.channels.messages[1]!.created_at).toBe(before.channels.messages[1]!.created_at);
  });

  it("append of an existing id replaces in place too", async () => {
    const t = newThread();
    await t.appendMessages([user("one", "m1"), assistant("two", "m2")], "input");
    await t.appendMessages([user("ONE", "m1"), user("new", "m3")], "input");
    expect((await t.getState()).channels.messages.map((m) => [m.id, m.content])).toEqual([
      ["m1", "ONE"],
      ["m2", "two"],
      ["m3", "new"],
    ]);
  });

  it("an id appended twice in one update (stored already or new) is one message, the second write in place, its created_at kept", async () => {
    const t = newThread();
    await t.appendMessages([user("one", "m1")], "input");
    const first = (await t.getState()).channels.messages[0]!;
    await t.update(
      [
        { op: "append", messages: [user("ONE", "m1"), user("new", "m3")] },
        { op: "set", channel: "n", value: 1 },
        { op: "append", messages: [user("NEW", "m3"), user("One", "m1")] },
      ],
      "input",
    );
    const s = await t.getState();
    expect(s.channels.messages.map((m) => [m.id, m.content])).toEqual([
      ["m1", "One"],
      ["m3", "NEW"],
    ]);
    expect(s.channels.messages[0]!.created_at).toBe(first.created_at);
  });

  it("replace of an unknown id is BEM-031", async () => {
    const t = newThread();
    await t.appendMessages([user("one", "m1")], "input");
    expect(await codeOf(t.update([{ op: "replace", message: user("x", "nope") }], "update"))).toBe("BEM-031");
  });

  it("remove by id removes only that message", async () => {
    const t = newThread();
    await t.appendMessages([user("a", "a"), user("b", "b"), user("c", "c")], "input");
    await t.update([{ op: "remove", id: "b" }], "update");
    expect((await t.getState()).channels.messages.map((m) => m.id)).toEqual(["a", "c"]);
  });

  it("remove_all followed by new messages in the same update", async () => {
    const t = newThread();
    await t.appendMessages([user("a"), user("b")], "input");
    const cp = await t.update([{ op: "remove_all" }, { op: "append", messages: [{ role: "system", content: "summary" }, user("c")] }], "update");
    const s = await t.getState();
    expect(texts(s)).toEqual(["summary", "c"]);
    expect(s.checkpoint_id).toBe(cp.id);
    expect(cp.writes.map((w) => w.op)).toEqual(["remove_all", "put", "put"]);
  });

  it("keeps parts content, tool calls and tool results as sent", async () => {
    const t = newThread();
    const call = { id: "call_1", type: "function" as const, function: { name: "lookup", arguments: '{"q":"x"}' } };
    await t.appendMessages(
      [
        {
          role: "user",
          content: [
            { type: "text", text: "see" },
            { type: "image_url", image_url: { url: "https://x/i.png" } },
          ],
        },
        { role: "assistant", content: null, tool_calls: [call] },
        { role: "tool", content: "42", tool_call_id: "call_1", name: "lookup", metadata: { ms: 3 } },
      ],
      "loop",
    );
    const [u, a, tool] = (await t.getState()).channels.messages;
    expect(u!.content).toEqual([
      { type: "text", text: "see" },
      { type: "image_url", image_url: { url: "https://x/i.png" } },
    ]);
    expect(a!.tool_calls).toEqual([call]);
    expect(tool).toMatchObject({ role: "tool", tool_call_id: "call_1", name: "lookup", metadata: { ms: 3 } });
  });
});

describe("other channels and reducers", () => {
  it("last_value is the default and replaces", async () => {
    const t = newThread();
    await t.update([{ op: "set", channel: "mood", value: "calm" }], "loop");
    await t.update([{ op: "set", channel: "mood", value: { level: 2 } }], "loop");
    const s = await t.getState();
    expect(s.channels.mood).toEqual({ level: 2 });
    expect(s.reducers).toEqual({ mood: "last_value" });
  });

  it("append concatenates lists", async () => {
    const t = newThread();
    await t.update([{ op: "set", channel: "todos", reducer: "append", value: ["a"] }], "loop");
    await t.update(
      [
        { op: "set", channel: "todos", value: ["b", "c"] },
        { op: "set", channel: "todos", value: [] },
      ],
      "loop",
    );
    expect((await t.getState()).channels.todos).toEqual(["a", "b", "c"]);
  });

  it("merge shallow-merges objects", async () => {
    const t = newThread();
    await t.update([{ op: "set", channel: "prefs", reducer: "merge", value: { theme: "dark", lang: { a: 1 } } }], "loop");
    await t.update([{ op: "set", channel: "prefs", value: { lang: { b: 2 }, tz: "UTC" } }], "loop");
    expect((await t.getState()).channels.prefs).toEqual({ theme: "dark", lang: { b: 2 }, tz: "UTC" });
  });

  it("a reducer mismatch is BEM-037 and a value of the wrong kind BEM-035, nothing applied", async () => {
    const t = newThread();
    await t.update([{ op: "set", channel: "todos", reducer: "append", value: ["a"] }], "loop");
    const before = await t.getState();
    expect(await codeOf(t.update([{ op: "set", channel: "todos", reducer: "merge", value: {} }], "loop"))).toBe("BEM-037");
    expect(await codeOf(t.update([{ op: "set", channel: "todos", value: "not a list" }], "loop"))).toBe("BEM-035");
    expect(await codeOf(t.update([{ op: "set", channel: "prefs", reducer: "merge", value: [1] }], "loop"))).toBe("BEM-035");
    expect(await t.getState()).toEqual(before);
  });

  it("channel writes and message ops commit together in one checkpoint", async () => {
    const t = newThread();
    const cp = await t.update(
      [
        { op: "append", messages: [user("hi")] },
        { op: "set", channel: "n", value: 1 },
        { op: "set", channel: "log", reducer: "append", value: ["x"] },
      ],
      "input",
    );
    const s = await t.getState();
    expect(s).toMatchObject({ checkpoint_id: cp.id, step: 1, channels: { n: 1, log: ["x"] } });
    expect(cp.writes.map((w) => w.op)).toEqual(["put", "set", "set"]);
  });
});
