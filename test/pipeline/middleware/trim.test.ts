import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../../src/core/tokens";
import { repairToolPairs } from "../../../src/pipeline/middleware/tool-pairs";
import { trim, trimMessages } from "../../../src/pipeline/middleware/trim";
import { isOverwrite, type StateUpdate } from "../../../src/pipeline/state";
import type { Message } from "../../../src/core/message";
import { assistant, call, conversation, stateOf, system, testRuntime, toolResult, user } from "./helpers";
import { checkToolPairs } from "../../support/tool-pairs-oracle";

const cost = (msgs: readonly Message[]) => msgs.reduce((n, m) => n + estimateTokens(m), 0);

describe("trimMessages", () => {
  it("keeps the newest messages that fit and the leading system message", () => {
    const sys = system("rules");
    const msgs = [sys, user("a".repeat(400)), assistant("b".repeat(400)), user("short"), assistant("reply")];
    const out = trimMessages(msgs, { maxTokens: cost([sys, msgs[3]!, msgs[4]!]), includeSystem: true });
    expect(out).toEqual([sys, msgs[3], msgs[4]]);
  });

  it("treats the system message as ordinary history without includeSystem", () => {
    const msgs = [system("rules"), user("hello"), assistant("hi")];
    const out = trimMessages(msgs, { maxTokens: cost(msgs.slice(1)), includeSystem: false });
    expect(out).toEqual(msgs.slice(1));
  });

  it("never keeps tool results without the call that asked for them", () => {
    const a = assistant(null, [call("c1"), call("c2")]);
    const r1 = toolResult("c1", "x".repeat(200));
    const r2 = toolResult("c2", "y".repeat(40));
    const last = assistant("final answer");
    // room for r2 and the final answer, not for the assistant + both results
    const out = trimMessages([user("q"), a, r1, r2, last], { maxTokens: cost([r2, last]) + 2 });
    expect(out).toEqual([last]);
  });

  it("drops orphan results even when they would fit", () => {
    const msgs = [toolResult("nobody"), user("q"), assistant("a")];
    expect(trimMessages(msgs, { maxTokens: 10_000 })).toEqual(msgs.slice(1));
  });

  it("uses a custom token counter", () => {
    const msgs = [user("1"), user("2"), user("3"), user("4")];
    expect(trimMessages(msgs, { maxTokens: 2, tokenCounter: () => 1 })).toEqual(msgs.slice(2));
  });

  describe("properties", () => {
    const budget = fc.integer({ min: 0, max: 600 });

    it("fits the budget (or is only the system message when that alone is too big)", () => {
      fc.assert(
        fc.property(conversation(), budget, fc.boolean(), (msgs, maxTokens, includeSystem) => {
          const out = trimMessages(msgs, { maxTokens, includeSystem });
          const sysAlone = includeSystem && msgs[0]?.role === "system" && estimateTokens(msgs[0]) > maxTokens;
          if (sysAlone) expect(out).toEqual([msgs[0]]);
          else expect(cost(out)).toBeLessThanOrEqual(maxTokens);
        }),
        { numRuns: 400 },
      );
    });

    it("never holds an orphan tool result or an unanswered call, under either provider's rules", () => {
      fc.assert(
        fc.property(conversation(), budget, fc.boolean(), (msgs, maxTokens, includeSystem) => {
          const out = trimMessages(msgs, { maxTokens, includeSystem });
          expect(checkToolPairs(out, "openai")).toEqual([]);
          expect(checkToolPairs(out, "anthropic")).toEqual([]);
        }),
        { numRuns: 400 },
      );
    });

    it("keeps the leading system message when asked", () => {
      fc.assert(
        fc.property(conversation({ leadingSystem: true }), budget, (msgs, maxTokens) => {
          expect(trimMessages(msgs, { maxTokens, includeSystem: true })[0]).toBe(msgs[0]);
        }),
      );
    });

    it("keeps the newest possible suffix (brute-force reference)", () => {
      fc.assert(
        fc.property(conversation(), budget, fc.boolean(), (msgs, maxTokens, includeSystem) => {
          const sys = includeSystem && msgs[0]?.role === "system" ? msgs[0] : undefined;
          const start = sys ? 1 : 0;
          const room = maxTokens - (sys ? estimateTokens(sys) : 0);
          // the longest suffix whose repaired form fits: first fitting k from the oldest end
          let expected: Message[] = [];
          for (let k = start; k <= msgs.length; k++) {
            const candidate = repairToolPairs(msgs.slice(k));
            if (cost(candidate) <= room) {
              expected = candidate;
              break;
            }
          }
          const out = trimMessages(msgs, { maxTokens, includeSystem });
          expect(out).toEqual(sys ? [sys, ...expected] : expected);
        }),
        { numRuns: 400 },
      );
    });
  });
});

describe("trim middleware", () => {
  it("by default trims only the model's view: no stored-history hook, no rewrite right needed, the stored state untouched", async () => {
    const sys = system("rules");
    const msgs = [sys, user("x".repeat(2000)), assistant("y".repeat(2000)), user("now")];
    const m = trim({ maxTokens: 50 });
    expect(m.beforeModel).toBeUndefined();
    expect(m.rewritesHistory).toBeUndefined();
    expect(m).toMatchObject({ viewOnly: true, windowTokens: 50 });
    const request = m.modelRequest!({ system: null, messages: msgs, tools: [] }, stateOf(msgs), testRuntime());
    expect(request?.messages).toEqual([sys, msgs[3]]);
    expect(
      trim().modelRequest!({ system: null, messages: msgs, tools: [] }, stateOf(msgs), testRuntime({ model: { name: "big", max_tokens: 100_000 } }))?.messages,
    ).toEqual(msgs);
  });

  it("persist: overwrites the stored messages channel with the trimmed list (and needs the rewrite right)", async () => {
    const sys = system("rules");
    const msgs = [sys, user("x".repeat(2000)), assistant("y".repeat(2000)), user("now")];
    const m = trim({ maxTokens: 50, persist: true });
    expect(m.rewritesHistory).toBe(true);
    const update = (await m.beforeModel!(stateOf(msgs), testRuntime())) as StateUpdate;
    expect(isOverwrite(update.messages)).toBe(true);
    if (isOverwrite(update.messages)) expect(update.messages.messages).toEqual([sys, msgs[3]]);
  });

  it("persist: a no-op when everything fits", async () => {
    const msgs = [system("rules"), user("hi"), assistant("hello")];
    expect(await trim({ maxTokens: 1000, persist: true }).beforeModel!(stateOf(msgs), testRuntime())).toBeUndefined();
  });

  it("defaults the budget to the routed model's max_tokens", async () => {
    const msgs = [user("a".repeat(400)), user("b")];
    const runtime = testRuntime({ model: { name: "tiny", max_tokens: 20 } });
    const update = (await trim({ persist: true }).beforeModel!(stateOf(msgs), runtime)) as StateUpdate;
    expect(isOverwrite(update.messages) && update.messages.messages).toEqual([msgs[1]]);
    expect(trim().modelRequest!({ system: null, messages: msgs, tools: [] }, stateOf(msgs), runtime)?.messages).toEqual([msgs[1]]);
  });
});
