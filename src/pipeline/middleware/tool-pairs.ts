import type { Message } from "../../thread/message";

/**
 * Tool-call adjacency. Providers reject a conversation where a tool result has
 * no matching call, or a call has no result. Anthropic is stricter than OpenAI:
 * the results of an assistant message's tool calls must come in the messages
 * immediately after it. `repairToolPairs` enforces the stricter rule, so its
 * output is valid for both; it runs after every change that can break pairs
 * (trim, summarization, delete, administrative updates).
 */

export type ToolPairRules = "openai" | "anthropic";

export type ToolPairViolation = {
  index: number;
  kind: "orphan_tool_result" | "duplicate_tool_result" | "unanswered_tool_call" | "result_not_adjacent";
  tool_call_id: string | undefined;
};

const hasCalls = (m: Message): boolean => m.role === "assistant" && (m.tool_calls?.length ?? 0) > 0;

export function hasContent(m: Message): boolean {
  if (m.content == null) return false;
  return typeof m.content === "string" ? m.content.length > 0 : m.content.length > 0;
}

/**
 * Keeps, for each assistant message, only the tool calls answered by the
 * contiguous tool messages right after it; drops tool messages that answer no
 * call there (orphans, duplicates, results separated from their call) and
 * assistant messages left with neither content nor calls. Returns the input
 * array itself when nothing had to change.
 */
export function repairToolPairs(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  let changed = false;
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    if (m.role === "tool") {
      changed = true; // not inside the result block of an assistant message
      i++;
      continue;
    }
    if (!hasCalls(m)) {
      out.push(m);
      i++;
      continue;
    }
    const calls = m.tool_calls!;
    const callIds = new Set(calls.map((c) => c.id));
    const answered = new Set<string>();
    const results: Message[] = [];
    let j = i + 1;
    for (; j < messages.length && messages[j]!.role === "tool"; j++) {
      const id = messages[j]!.tool_call_id;
      if (id !== undefined && callIds.has(id) && !answered.has(id)) {
        answered.add(id);
        results.push(messages[j]!);
      } else changed = true;
    }
    if (answered.size === calls.length) out.push(m);
    else {
      changed = true;
      const seen = new Set<string>();
      const kept = calls.filter((c) => answered.has(c.id) && !seen.has(c.id) && seen.add(c.id));
      if (kept.length > 0) out.push({ ...m, tool_calls: kept });
      else if (hasContent(m)) {
        const { tool_calls: _dropped, ...rest } = m;
        out.push(rest);
      }
    }
    out.push(...results);
    i = j;
  }
  return changed ? out : (messages as Message[]);
}

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
