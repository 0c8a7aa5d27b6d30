import type { Message } from "../../src/thread/message";

/**
 * The test oracle for tool-call adjacency: lists every violation of one provider's
 * rules (src/pipeline/middleware/tool-pairs.ts repairs; this only checks).
 */
export type ToolPairRules = "openai" | "anthropic";

export type ToolPairViolation = {
  index: number;
  kind: "orphan_tool_result" | "duplicate_tool_result" | "unanswered_tool_call" | "result_not_adjacent";
  tool_call_id: string | undefined;
};

const hasCalls = (m: Message): boolean => m.role === "assistant" && (m.tool_calls?.length ?? 0) > 0;

/** Lists every tool-pairing violation under one provider's rules (empty = valid). */
export function checkToolPairs(messages: readonly Message[], rules: ToolPairRules): ToolPairViolation[] {
  return rules === "openai" ? checkOpenAI(messages) : checkAnthropic(messages);
}

/** OpenAI: every tool message answers an open call of a preceding assistant message; every call is answered. */
function checkOpenAI(messages: readonly Message[]): ToolPairViolation[] {
  const violations: ToolPairViolation[] = [];
  const open = new Map<string, number>(); // call id → index of the assistant message
  const answered = new Set<string>();
  messages.forEach((m, index) => {
    if (hasCalls(m)) for (const c of m.tool_calls!) open.set(c.id, index);
    if (m.role !== "tool") return;
    const id = m.tool_call_id;
    if (id !== undefined && answered.has(id)) violations.push({ index, kind: "duplicate_tool_result", tool_call_id: id });
    else if (id === undefined || !open.has(id)) violations.push({ index, kind: "orphan_tool_result", tool_call_id: id });
    else {
      answered.add(id);
      open.delete(id);
    }
  });
  for (const [id, index] of open) violations.push({ index, kind: "unanswered_tool_call", tool_call_id: id });
  return violations.sort((a, b) => a.index - b.index);
}

/** Anthropic: each assistant message's calls are all answered by the tool messages directly after it, and only there. */
function checkAnthropic(messages: readonly Message[]): ToolPairViolation[] {
  const violations: ToolPairViolation[] = [];
  const everCalled = new Set<string>();
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    if (m.role === "tool") {
      const id = m.tool_call_id;
      const kind = id !== undefined && everCalled.has(id) ? "result_not_adjacent" : "orphan_tool_result";
      violations.push({ index: i, kind, tool_call_id: id });
      i++;
      continue;
    }
    if (!hasCalls(m)) {
      i++;
      continue;
    }
    const pending = new Set(m.tool_calls!.map((c) => c.id));
    const answered = new Set<string>();
    for (const c of m.tool_calls!) everCalled.add(c.id);
    let j = i + 1;
    for (; j < messages.length && messages[j]!.role === "tool"; j++) {
      const id = messages[j]!.tool_call_id;
      if (id !== undefined && answered.has(id)) violations.push({ index: j, kind: "duplicate_tool_result", tool_call_id: id });
      else if (id === undefined || !pending.has(id)) violations.push({ index: j, kind: "orphan_tool_result", tool_call_id: id });
      else {
        pending.delete(id);
        answered.add(id);
      }
    }
    for (const id of pending) violations.push({ index: i, kind: "unanswered_tool_call", tool_call_id: id });
    i = j;
  }
  return violations;
}
