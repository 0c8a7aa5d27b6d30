import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../../src/core/tokens";
import { runBeforeModel } from "../../../src/pipeline/middleware/compose";
import { keepBoundary, summarization, SUMMARY_PREFIX, SUMMARY_SUFFIX, type SummaryOf } from "../../../src/pipeline/middleware/summarization";
import { HookOutcome } from "../../../src/pipeline/middleware/types";
import { applyUpdate, isOverwrite, type StateUpdate } from "../../../src/pipeline/state";
import type { Message } from "../../../src/core/message";
import { assistant, call, stateOf, testRuntime, toolResult, user } from "./helpers";
import { checkToolPairs } from "../../support/tool-pairs-oracle";
import { expandSummary } from "../../support/expand-summary";

const turns = (n: number): Message[] =>
  Array.from({ length: n }, (_, i) => [user(`question ${i}`, `u${i}`), assistant(`answer ${i}`, undefined, `a${i}`)]).flat();

function summarizer() {
  const calls: { messages: Message[]; model?: string }[] = [];
  const summarize = async (messages: Message[], opts: { model?: string }) => {
    calls.push({ messages, ...opts });
    return `they talked about ${messages.length} things`;
  };
  return { calls, summarize };
}

describe("summarization", () => {
  it("triggers at the message threshold and not before", async () => {
    const mw = summarization({ trigger: { messages: 8 }, keep: { messages: 2 } });
    const s = summarizer();
    const runtime = testRuntime({ summarize: s.summarize });
    expect(await mw.beforeModel!(stateOf(turns(4).slice(0, 7)), runtime)).toBeUndefined();
    expect(s.calls).toHaveLength(0);
    const update = (await mw.beforeModel!(stateOf(turns(4)), runtime)) as StateUpdate;
    expect(s.calls).toHaveLength(1);
    expect(isOverwrite(update.messages)).toBe(true);
  });

  it("triggers on tokens and on a fraction of the model's context", async () => {
    const msgs = turns(3);
    const tokens = msgs.reduce((n, m) => n + estimateTokens(m), 0);
    const s = summarizer();
    const rt = (max: number) => testRuntime({ summarize: s.summarize, model: { name: "m", max_tokens: max } });
    const byTokens = (t: number) => summarization({ trigger: { tokens: t }, keep: { messages: 2 } });
    expect(await byTokens(tokens + 1).beforeModel!(stateOf(msgs), rt(10_000))).toBeUndefined();
    expect(await byTokens(tokens).beforeModel!(stateOf(msgs), rt(10_000))).toBeDefined();
    const byFraction = summarization({ trigger: { fraction: 0.5 }, keep: { messages: 2 } });
    expect(await byFraction.beforeModel!(stateOf(msgs), rt(tokens * 2 + 2))).toBeUndefined();
    expect(await byFraction.beforeModel!(stateOf(msgs), rt(tokens * 2))).toBeDefined();
  });

  it("replaces the older messages with one labelled summary naming the range, then the kept ones", async () => {
    const msgs = turns(5);
    const s = summarizer();
    const mw = summarization({ trigger: { messages: 10 }, keep: { messages: 4 }, model: "cheap-one" });
    const update = (await mw.beforeModel!(stateOf(msgs), testRuntime({ summarize: s.summarize }))) as StateUpdate;
    expect(s.calls[0]!.messages).toEqual(msgs.slice(0, 6));
    expect(s.calls[0]!.model).toBe("cheap-one");
    const out = applyUpdate(stateOf(msgs), update).messages;
    expect(out.slice(1)).toEqual(msgs.slice(6));
    expect(out[0]).toMatchObject({
      role: "user", // labelled data, not an operator rule (issue 11, finding 11)
      content: `${SUMMARY_PREFIX}they talked about 6 things${SUMMARY_SUFFIX}`,
      metadata: { summary_of: { from_id: "u0", to_id: "a2", count: 6 } },
    });
  });

  it("never splits a tool pair at the boundary", async () => {
    const a = assistant(null, [call("c1"), call("c2")], "call");
    const msgs = [
      user("q", "q0"),
      assistant("a", undefined, "a0"),
      user("look", "q1"),
      a,
      toolResult("c1"),
      toolResult("c2"),
      assistant("found", undefined, "f"),
    ];
    // keep 3 messages would start at the second result: moved back to the assistant
    expect(keepBoundary(msgs, { messages: 3 })).toBe(3);
    // keep by tokens moves forward instead, staying within the budget
    expect(keepBoundary(msgs, { tokens: estimateTokens(msgs[5]!) + estimateTokens(msgs[6]!) })).toBe(6);
    const s = summarizer();
    const update = (await summarization({ trigger: { messages: 5 }, keep: { messages: 3 } }).beforeModel!(
      stateOf(msgs),
      testRuntime({ summarize: s.summarize }),
    )) as StateUpdate;
    const out = applyUpdate(stateOf(msgs), update).messages;
    expect(out.slice(1).map((m) => m.id)).toEqual(msgs.slice(3).map((m) => m.id));
    expect(checkToolPairs(out, "anthropic")).toEqual([]);
  });

  it("is fail-safe: a failed summary call changes nothing and returns a warning", async () => {
    const msgs = turns(5);
    const mw = summarization({ trigger: { messages: 4 }, keep: { messages: 2 } });
    const failing = testRuntime({
      summarize: async () => {
        throw new Error("upstream exploded with secret sk-123");
      },
    });
    const run = await runBeforeModel([mw], stateOf(msgs), failing);
    expect(run.state.messages).toBe(msgs);
    expect(run.updates).toEqual([]);
    expect(run.events).toEqual([expect.objectContaining({ middleware: "summarization", level: "warn", type: "summarization_failed" })]);
    expect(JSON.stringify(run.events)).not.toContain("sk-123");
    const none = await mw.beforeModel!(stateOf(msgs), testRuntime());
    expect(none).toBeInstanceOf(HookOutcome);
    expect((none as HookOutcome).update).toBeUndefined();
  });

  it("is reversible: the checkpoint before the summary restores the named range", async () => {
    const before = turns(6);
    const s = summarizer();
    const update = (await summarization({ trigger: { messages: 6 }, keep: { messages: 4 } }).beforeModel!(
      stateOf(before),
      testRuntime({ summarize: s.summarize }),
    )) as StateUpdate;
    const after = applyUpdate(stateOf(before), update).messages;
    const summary = after[0]!;
    expect((summary.metadata!.summary_of as SummaryOf).count).toBe(8);
    // later turns keep arriving after the summary; reversal keeps them
    const later = [...after, user("more", "later-u"), assistant("sure", undefined, "later-a")];
    expect(expandSummary(later, summary.id, before)).toEqual([...before, ...later.slice(-2)]);
    expect(expandSummary(later, summary.id, before.slice(1))).toBeNull();
  });

  it("is a no-op when nothing is old enough to summarize", async () => {
    const s = summarizer();
    const mw = summarization({ trigger: { messages: 2 }, keep: { messages: 10 } });
    expect(await mw.beforeModel!(stateOf(turns(2)), testRuntime({ summarize: s.summarize }))).toBeUndefined();
    expect(s.calls).toHaveLength(0);
  });
});
