import type { Message } from "../../thread/message";

/**
 * Tool-call adjacency. Providers reject a conversation where a tool result has
 * no matching call, or a call has no result. Anthropic is stricter than OpenAI:
 * the results of an assistant message's tool calls must come in the messages
 * immediately after it. `repairToolPairs` enforces the stricter rule, so its
 * output is valid for both; it runs after every change that can break pairs
 * (trim, summarization, delete, administrative updates).
 */

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
