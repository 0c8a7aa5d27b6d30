import fc from "fast-check";
import type { Runtime } from "../../../src/pipeline/runtime";
import type { AgentState } from "../../../src/pipeline/state";
import type { Message, ToolCall } from "../../../src/core/message";

let seq = 0;
const nextId = (p: string) => `${p}${++seq}`;

export const user = (content: string, id = nextId("u")): Message => ({ id, role: "user", content, created_at: 1 });
export const system = (content: string, id = nextId("s")): Message => ({ id, role: "system", content, created_at: 1 });
export const assistant = (content: string | null, calls?: ToolCall[], id = nextId("a")): Message => ({
  id,
  role: "assistant",
  content,
  ...(calls ? { tool_calls: calls } : {}),
  created_at: 1,
});
export const call = (id: string, name = "lookup", args = "{}"): ToolCall => ({ id, type: "function", function: { name, arguments: args } });
export const toolResult = (callId: string, content = "result", extra: Partial<Message> = {}): Message => ({
  id: nextId("t"),
  role: "tool",
  content,
  tool_call_id: callId,
  created_at: 1,
  ...extra,
});

export const stateOf = (messages: Message[], channels: Record<string, unknown> = {}): AgentState => ({ ...channels, messages });

export function testRuntime(over: Partial<Runtime> = {}): Runtime {
  let clock = 1_000;
  let ids = 0;
  return {
    model: { name: "test-model", max_tokens: 4096 },
    context: {},
    agent: { name: "test-agent" },
    now: () => clock++,
    newId: () => `gen-${++ids}`,
    ...over,
  };
}

/**
 * Conversations shaped like real ones — users, replies, tool calls with their
 * results (in any order) — plus the damage trimming and editing can leave:
 * orphan results, unanswered calls, results after an unrelated message.
 */
export const conversation = (opts: { leadingSystem?: boolean } = {}): fc.Arbitrary<Message[]> => {
  const text = fc.string({ maxLength: 120 });
  const segment = fc.oneof(
    { weight: 4, arbitrary: text.map((t) => ({ kind: "user" as const, t })) },
    { weight: 3, arbitrary: text.map((t) => ({ kind: "assistant" as const, t })) },
    {
      weight: 4,
      arbitrary: fc
        .record({
          t: fc.option(text, { nil: null }),
          n: fc.integer({ min: 1, max: 3 }),
          answered: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
          reversed: fc.boolean(),
          results: fc.array(fc.string({ maxLength: 200 }), { minLength: 3, maxLength: 3 }),
        })
        .map((r) => ({ kind: "calls" as const, ...r })),
    },
    { weight: 1, arbitrary: text.map((t) => ({ kind: "orphan" as const, t })) },
    { weight: 1, arbitrary: text.map((t) => ({ kind: "system" as const, t })) },
  );
  return fc.tuple(fc.boolean(), fc.string({ maxLength: 200 }), fc.array(segment, { maxLength: 40 })).map(([sys, sysText, segs]) => {
    let n = 0;
    const id = (p: string) => `${p}-${++n}`;
    const out: Message[] = [];
    if (opts.leadingSystem ?? sys) out.push({ id: id("sys"), role: "system", content: sysText, created_at: 0 });
    for (const s of segs) {
      if (s.kind === "user") out.push({ id: id("u"), role: "user", content: s.t, created_at: 0 });
      else if (s.kind === "assistant") out.push({ id: id("a"), role: "assistant", content: s.t, created_at: 0 });
      else if (s.kind === "system") out.push({ id: id("s"), role: "system", content: s.t, created_at: 0 });
      else if (s.kind === "orphan") out.push({ id: id("t"), role: "tool", content: s.t, tool_call_id: id("nocall"), created_at: 0 });
      else {
        const calls = Array.from({ length: s.n }, () => call(id("c"), "lookup", JSON.stringify({ q: "x" })));
        out.push({ id: id("a"), role: "assistant", content: s.t, tool_calls: calls, created_at: 0 });
        const results = calls
          .filter((_, i) => s.answered[i])
          .map((c, i): Message => ({ id: id("t"), role: "tool", content: s.results[i] ?? "", tool_call_id: c.id, created_at: 0 }));
        out.push(...(s.reversed ? results.reverse() : results));
      }
    }
    return out;
  });
};
