import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyStep, applyUpdate, mergeStepUpdates, overwrite, remove, removeAll, toThreadOps, type MessageOp } from "../../../src/pipeline/state";
import { applyWrite, emptyReplayState } from "../../../src/thread/reducers";
import type { Message } from "../../../src/core/message";
import { assistant, stateOf, user } from "./helpers";

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return "no error";
};

describe("applyUpdate", () => {
  it("appends new messages and replaces an existing id in place", () => {
    const a = user("first", "m1");
    const b = user("second", "m2");
    const edited = { ...a, content: "first, edited" };
    const out = applyUpdate(stateOf([a, b]), { messages: [edited, user("third", "m3")] });
    expect(out.messages.map((m) => [m.id, m.content])).toEqual([
      ["m1", "first, edited"],
      ["m2", "second"],
      ["m3", "third"],
    ]);
  });

  it("a new id twice in one update is added once, as written last; the input list is left as it was", () => {
    const before = [user("first", "m1"), user("second", "m2")];
    const out = applyUpdate(stateOf(before), { messages: [user("draft", "m3"), user("final", "m3"), { ...before[0]!, content: "again" }] });
    expect(out.messages.map((m) => [m.id, m.content])).toEqual([
      ["m1", "again"],
      ["m2", "second"],
      ["m3", "final"],
    ]);
    expect(before.map((m) => m.content)).toEqual(["first", "second"]);
  });

  it("removes by id, clears with remove_all, and replaces with an overwrite", () => {
    const s = stateOf([user("a", "m1"), user("b", "m2"), user("c", "m3")]);
    expect(applyUpdate(s, { messages: [remove("m2")] }).messages.map((m) => m.id)).toEqual(["m1", "m3"]);
    expect(applyUpdate(s, { messages: [removeAll(), user("d", "m4")] }).messages.map((m) => m.id)).toEqual(["m4"]);
    expect(applyUpdate(s, { messages: overwrite([user("e", "m5")]) }).messages.map((m) => m.id)).toEqual(["m5"]);
  });

  it("rejects removing an unknown id as the thread does (BEM-031) and leaves the input untouched", () => {
    const s = stateOf([user("a", "m1")]);
    expect(code(() => applyUpdate(s, { messages: [remove("nope")] }))).toBe("BEM-031");
    expect(s.messages).toHaveLength(1);
  });

  it("writes channels through their reducers; undeclared channels are last-value", () => {
    const s = stateOf([], { notes: ["a"], prefs: { theme: "dark" }, mood: "ok" });
    const out = applyUpdate(s, { notes: ["b", "c"], prefs: { lang: "en" }, mood: "good", fresh: 1 }, { notes: "append", prefs: "merge" });
    expect(out).toMatchObject({ notes: ["a", "b", "c"], prefs: { theme: "dark", lang: "en" }, mood: "good", fresh: 1 });
  });

  it("rejects values a reducer cannot take (BEM-035)", () => {
    expect(code(() => applyUpdate(stateOf([]), { notes: "x" }, { notes: "append" }))).toBe("BEM-035");
    expect(code(() => applyUpdate(stateOf([]), { prefs: [1] }, { prefs: "merge" }))).toBe("BEM-035");
  });
});

describe("mergeStepUpdates", () => {
  it("merges parallel writes through append and merge reducers, in order", () => {
    const merged = mergeStepUpdates(
      [
        { log: ["a"], prefs: { x: 1 }, messages: [user("1", "p1")] },
        { log: ["b"], prefs: { y: 2 }, messages: [user("2", "p2")] },
      ],
      { log: "append", prefs: "merge" },
    );
    expect(merged.log).toEqual(["a", "b"]);
    expect(merged.prefs).toEqual({ x: 1, y: 2 });
    expect((merged.messages as Message[]).map((m) => m.id)).toEqual(["p1", "p2"]);
  });

  it("two different last-value writes in one step are a conflict (BEM-082); equal ones are not", () => {
    expect(code(() => mergeStepUpdates([{ user_name: "Ann" }, { user_name: "Bob" }]))).toBe("BEM-082");
    expect(mergeStepUpdates([{ user_name: "Ann" }, { user_name: "Ann" }])).toEqual({ user_name: "Ann" });
  });

  it("an overwrite next to any other message write is a conflict", () => {
    expect(code(() => mergeStepUpdates([{ messages: overwrite([]) }, { messages: overwrite([]) }]))).toBe("BEM-082");
    expect(code(() => mergeStepUpdates([{ messages: overwrite([]) }, { messages: [user("x")] }]))).toBe("BEM-082");
  });

  it("applyStep applies the merged update", () => {
    const { state, update } = applyStep(stateOf([]), [{ n: 1 }, { tags: ["a"] }, { tags: ["b"] }], { tags: "append" });
    expect(state).toMatchObject({ n: 1, tags: ["a", "b"] });
    expect(update).toEqual({ n: 1, tags: ["a", "b"] });
  });
});

describe("toThreadOps", () => {
  it("maps an overwrite to remove_all + append and channels to set with their reducer", () => {
    const m = assistant("hi", undefined, "a1");
    expect(toThreadOps({ messages: overwrite([m]), todos: [], log: ["x"] }, { log: "append" })).toEqual([
      { op: "remove_all" },
      { op: "append", messages: [m] },
      { op: "set", channel: "todos", value: [], reducer: "last_value" },
      { op: "set", channel: "log", value: ["x"], reducer: "append" },
    ]);
  });

  it("replays to the same messages as applyUpdate through the thread's own reducers", () => {
    const ids = ["m1", "m2", "m3", "m4"];
    const op = fc.oneof(
      fc.constantFrom(...ids).map((id): MessageOp => user(`v-${Math.random()}`, id)),
      fc.constantFrom(...ids).map((id): MessageOp => remove(id)),
      fc.constant<MessageOp>(removeAll()),
    );
    fc.assert(
      fc.property(fc.uniqueArray(fc.constantFrom(...ids)), fc.array(op, { maxLength: 12 }), (start, ops) => {
        const initial = stateOf(start.map((id) => user(id, id)));
        let expected: Message[];
        try {
          expected = applyUpdate(initial, { messages: ops }).messages;
        } catch {
          return; // removing an absent id is refused by both; covered above
        }
        const replay = emptyReplayState();
        for (const m of initial.messages) replay.messages.set(m.id, m);
        for (const t of toThreadOps({ messages: ops })) {
          if (t.op === "append") for (const m of t.messages) applyWrite(replay, { op: "put", message: m as Message });
          else if (t.op === "remove") applyWrite(replay, { op: "remove", id: t.id });
          else if (t.op === "remove_all") applyWrite(replay, { op: "remove_all" });
        }
        expect([...replay.messages.values()]).toEqual(expected);
      }),
    );
  });
});
