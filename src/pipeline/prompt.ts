import { estimateTokens } from "../core/tokens";
import type { ChatMessage } from "../providers/types";
import type { Message, ParsedMessageInput } from "../core/message";

/**
 * The parts of one model call, kept apart so the prompt can be re-fitted to a
 * smaller context window on failover without loading memory again.
 * Order sent: instructions (agent prompt, client system), facts, turns, new input.
 */
export type PromptParts = {
  instructions: ChatMessage[];
  facts: Message[];
  /** Oldest → newest, already within the first candidate's budget. */
  turns: Message[];
  input: ChatMessage[];
  /**
   * Facts after the conversation instead of before it (Anthropic Messages clients): the client's
   * prefix (system, earlier turns) then reaches the provider byte for byte, so its prompt cache
   * holds, while the facts, which change with each question, come last.
   */
  factsLast?: boolean;
};

export const tokensOf = (messages: readonly ChatMessage[]): number => messages.reduce((n, m) => n + estimateTokens(m), 0);

/** What a provider is sent of a message, stored or new (never its id, timestamps or metadata). */
export const toChat = (m: ParsedMessageInput): ChatMessage => {
  const c: ChatMessage = { role: m.role, content: m.content };
  if (m.name !== undefined) c.name = m.name;
  if (m.tool_calls !== undefined) c.tool_calls = m.tool_calls;
  if (m.tool_call_id !== undefined) c.tool_call_id = m.tool_call_id;
  if (m.is_error !== undefined) c.is_error = m.is_error;
  return c;
};

/**
 * The messages for a model with `budget` tokens: instructions, facts and input
 * always go; the oldest turns are dropped until the rest fits. A leading tool
 * result whose call was dropped goes too, so no provider sees an orphan.
 */
export function assemble(parts: PromptParts, budget: number): ChatMessage[] {
  const fixed = tokensOf(parts.instructions) + tokensOf(parts.facts.map(toChat)) + tokensOf(parts.input);
  let room = budget - fixed;
  let start = parts.turns.length;
  while (start > 0) {
    const t = estimateTokens(parts.turns[start - 1]!);
    if (t > room) break;
    room -= t;
    start--;
  }
  while (start < parts.turns.length && parts.turns[start]!.role === "tool") start++;
  const facts = parts.facts.map(toChat);
  const turns = parts.turns.slice(start).map(toChat);
  return parts.factsLast ? [...parts.instructions, ...turns, ...parts.input, ...facts] : [...parts.instructions, ...facts, ...turns, ...parts.input];
}
