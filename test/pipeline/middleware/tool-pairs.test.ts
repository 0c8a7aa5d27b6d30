import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { repairToolPairs } from "../../../src/pipeline/middleware/tool-pairs";
import { assistant, call, conversation, toolResult, user } from "./helpers";
import { checkToolPairs } from "../../support/tool-pairs-oracle";

describe("checkToolPairs", () => {
  it("accepts answered calls under both rule sets", () => {
    const msgs = [user("hi"), assistant(null, [call("c1"), call("c2")]), toolResult("c2"), toolResult("c1"), assistant("done")];
    expect(checkToolPairs(msgs, "openai")).toEqual([]);
    expect(checkToolPairs(msgs, "anthropic")).toEqual([]);
  });

  it("finds orphan results and unanswered calls", () => {
    const msgs = [user("hi"), toolResult("ghost"), assistant(null, [call("c1")]), user("next")];
    for (const rules of ["openai", "anthropic"] as const) {
      const kinds = checkToolPairs(msgs, rules).map((v) => [v.kind, v.tool_call_id]);
      expect(kinds).toEqual([
        ["orphan_tool_result", "ghost"],
        ["unanswered_tool_call", "c1"],
      ]);
    }
  });

  it("only Anthropic rejects a result that is not right after its call", () => {
    const msgs = [user("hi"), assistant(null, [call("c1")]), user("wait"), toolResult("c1")];
    expect(checkToolPairs(msgs, "openai")).toEqual([]);
    expect(checkToolPairs(msgs, "anthropic").map((v) => v.kind)).toEqual(["unanswered_tool_call", "result_not_adjacent"]);
  });

  it("flags a second result for one call", () => {
    const msgs = [assistant(null, [call("c1")]), toolResult("c1"), toolResult("c1")];
    expect(checkToolPairs(msgs, "openai").map((v) => v.kind)).toEqual(["duplicate_tool_result"]);
    expect(checkToolPairs(msgs, "anthropic").map((v) => v.kind)).toEqual(["duplicate_tool_result"]);
  });
});

describe("repairToolPairs", () => {
  it("keeps only answered calls and drops orphans", () => {
    const a = assistant("let me look", [call("c1"), call("c2")]);
    const r1 = toolResult("c1");
    const orphan = toolResult("ghost");
    const out = repairToolPairs([user("q"), a, r1, orphan]);
    expect(out.map((m) => m.id)).toEqual([expect.stringMatching(/^u/), a.id, r1.id]);
    expect(out[1]!.tool_calls!.map((c) => c.id)).toEqual(["c1"]);
  });

  it("drops an assistant left with no calls and no content, keeps one with content", () => {
    const silent = assistant(null, [call("x1")]);
    const talking = assistant("thinking", [call("x2")]);
    const out = repairToolPairs([user("q"), silent, user("q2"), talking]);
    expect(out.map((m) => m.id)).not.toContain(silent.id);
    const kept = out.find((m) => m.id === talking.id)!;
    expect(kept.content).toBe("thinking");
    expect("tool_calls" in kept).toBe(false);
  });

  it("returns the same array when nothing changes", () => {
    const msgs = [user("q"), assistant(null, [call("ok1")]), toolResult("ok1"), assistant("a")];
    expect(repairToolPairs(msgs)).toBe(msgs);
  });

  it("output is valid under both rule sets, idempotent, and an order-preserving subset", () => {
    fc.assert(
      fc.property(conversation(), (msgs) => {
        const out = repairToolPairs(msgs);
        expect(checkToolPairs(out, "openai")).toEqual([]);
        expect(checkToolPairs(out, "anthropic")).toEqual([]);
        expect(repairToolPairs(out)).toBe(out);
        const positions = out.map((m) => msgs.findIndex((o) => o.id === m.id));
        expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("changes nothing in a conversation that already satisfies Anthropic's rule", () => {
    fc.assert(
      fc.property(conversation(), (msgs) => {
        fc.pre(checkToolPairs(msgs, "anthropic").length === 0);
        expect(repairToolPairs(msgs)).toBe(msgs);
      }),
      { numRuns: 300 },
    );
  });
});
