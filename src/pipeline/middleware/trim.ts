import { estimateTokens, type TokenEstimator } from "../../core/tokens";
import type { Message } from "../../core/message";
import { overwrite, sameMessages } from "../state";
import { hasContent, repairToolPairs } from "./tool-pairs";
import type { Middleware } from "./types";

export type TrimOptions = {
  maxTokens: number;
  strategy?: "last";
  /** Keep messages[0] when it is a system message (it is kept even if it alone exceeds the budget). */
  includeSystem?: boolean;
  tokenCounter?: TokenEstimator;
};

/**
 * Keeps the newest suffix of the conversation that fits `maxTokens` once tool
 * pairs are repaired (an assistant keeps only calls whose results are kept;
 * orphan results are dropped). Walks backwards and counts only what it keeps
 * plus one message, so the cost is O(kept), not O(history).
 *
 * Dropping from the front only ever removes whole tool blocks or orphans, so the
 * repaired cost grows with the suffix and the first message that does not fit
 * ends the walk: the result is the longest suffix that fits.
 */
export function trimMessages(messages: readonly Message[], opts: TrimOptions): Message[] {
  const count = opts.tokenCounter ?? estimateTokens;
  const first = messages[0];
  const system = opts.includeSystem && first?.role === "system" ? first : undefined;
  const start = system ? 1 : 0;
  const budget = opts.maxTokens - (system ? count(system) : 0);
  let used = 0;
  let cut = messages.length; // the kept suffix is messages[cut..]
  let blockEnd = -1; // exclusive end of the tool block directly after index i, when i+1 is a tool message
  for (let i = messages.length - 1; i >= start; i--) {
    const m = messages[i]!;
    if (m.role === "tool") {
      if (blockEnd < 0) blockEnd = i + 1;
      cut = i; // free until its assistant message joins: an orphan at the front is dropped
      continue;
    }
    let cost: number;
    if (m.role === "assistant" && m.tool_calls?.length) {
      cost = pairCost(messages, m, i + 1, blockEnd < 0 ? i + 1 : blockEnd, count);
    } else cost = count(m);
    blockEnd = -1;
    if (used + cost > budget) break;
    used += cost;
    cut = i;
  }
  const kept = repairToolPairs(messages.slice(cut));
  return system ? [system, ...kept] : kept;
}

/** Tokens of an assistant message and its block of results, as repairToolPairs will keep them. */
function pairCost(messages: readonly Message[], m: Message, from: number, to: number, count: TokenEstimator): number {
  const calls = m.tool_calls!;
  const ids = new Set(calls.map((c) => c.id));
  const answered = new Set<string>();
  let cost = 0;
  for (let j = from; j < to; j++) {
    const id = messages[j]!.tool_call_id;
    if (id !== undefined && ids.has(id) && !answered.has(id)) {
      answered.add(id);
      cost += count(messages[j]!);
    }
  }
  if (answered.size === calls.length) return cost + count(m);
  const seen = new Set<string>();
  const kept = calls.filter((c) => answered.has(c.id) && !seen.has(c.id) && seen.add(c.id));
  if (kept.length > 0) return cost + count({ ...m, tool_calls: kept });
  if (!hasContent(m)) return 0;
  const { tool_calls: _dropped, ...rest } = m;
  return cost + count(rest);
}

/**
 * Keeps the model's view of the conversation within `maxTokens` (default: the routed model's).
 * By default only the view: the stored thread keeps every message, so recall can still bring
 * back earlier turns (with recall on, the run's window is already within `maxTokens`: see
 * `windowTokens`). `persist: true` is the older behaviour — a before_model hook that overwrites
 * the stored messages channel with the trimmed list, deleting what recall would find.
 */
export function trim(opts: { maxTokens?: number; includeSystem?: boolean; tokenCounter?: TokenEstimator; persist?: boolean } = {}): Middleware {
  const cut = (messages: readonly Message[], maxTokens: number) =>
    trimMessages(messages, { maxTokens: opts.maxTokens ?? maxTokens, includeSystem: opts.includeSystem ?? true, tokenCounter: opts.tokenCounter });
  if (opts.persist) {
    return {
      name: "trim",
      rewritesHistory: true,
      beforeModel(state, runtime) {
        const kept = cut(state.messages, runtime.model.max_tokens);
        return sameMessages(kept, state.messages) ? undefined : { messages: overwrite(kept) };
      },
    };
  }
  return {
    name: "trim",
    viewOnly: true,
    ...(opts.maxTokens !== undefined ? { windowTokens: opts.maxTokens } : {}),
    modelRequest: (request, _state, runtime) => ({ ...request, messages: cut(request.messages, runtime.model.max_tokens) }),
  };
}
