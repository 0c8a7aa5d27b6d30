import { describe, expect, it } from "vitest";
import { deleteOld, deleteOldTurns } from "../../../src/pipeline/middleware/delete-old";
import { applyUpdate, type StateUpdate } from "../../../src/pipeline/state";
import { assistant, call, stateOf, system, testRuntime, toolResult, user } from "./helpers";
import { checkToolPairs } from "../../support/tool-pairs-oracle";

describe("delete-old", () => {
  const conversation = () => {
    const sys = system("summary so far", "s0");
    const t1 = [user("one", "u1"), assistant(null, [call("k1")], "a1"), toolResult("k1"), assistant("done one", undefined, "a1b")];
    const t2 = [user("two", "u2"), assistant("reply two", undefined, "a2")];
    const t3 = [user("three", "u3"), assistant(null, [call("k3")], "a3"), toolResult("k3"), assistant("done three", undefined, "a3b")];
    return { sys, t1, t2, t3, all: [sys, ...t1, ...t2, ...t3] };
  };

  it("keeps the newest N turns with their tool results, and older system messages", async () => {
    const { sys, t2, t3, all, t1 } = conversation();
    const update = (await deleteOld({ keep: 2 }).afterModel!(stateOf(all), testRuntime())) as StateUpdate;
    expect(update.messages).toEqual(t1.map((m) => ({ op: "remove", id: m.id })));
    const after = applyUpdate(stateOf(all), update);
    expect(after.messages).toEqual([sys, ...t2, ...t3]);
    expect(checkToolPairs(after.messages, "anthropic")).toEqual([]);
  });

  it("drops older system messages too when keepSystem is false", () => {
    const { sys, t1, t2, all } = conversation();
    const ops = deleteOldTurns(all, { keep: 1, keepSystem: false });
    expect(ops).toEqual([sys, ...t1, ...t2].map((m) => ({ op: "remove", id: m.id })));
  });

  it("repairs an assistant whose results fell on the deleted side", () => {
    // a malformed history: the result of c9 sits after the next user message
    const a = assistant("calling", [call("c9")], "a9");
    const msgs = [user("old", "u8"), a, user("new", "u9"), toolResult("c9"), assistant("ok", undefined, "a10")];
    const ops = deleteOldTurns(msgs, { keep: 1 });
    const after = applyUpdate(stateOf(msgs), { messages: ops }).messages;
    expect(after.map((m) => m.id)).toEqual(["u9", "a10"]);
  });

  it("is a no-op with no more than N turns", async () => {
    const { all } = conversation();
    expect(await deleteOld({ keep: 3 }).afterModel!(stateOf(all), testRuntime())).toBeUndefined();
    expect(await deleteOld({ keep: 10 }).afterModel!(stateOf(all), testRuntime())).toBeUndefined();
  });
});
