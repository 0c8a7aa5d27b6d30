import type { Content } from "./message";
import { messageText } from "./message";

/** What an estimate reads of a message (stored, input or provider-bound). */
export type Estimable = {
  role: string;
  content?: Content | null;
  name?: string;
  tool_calls?: readonly { function: { name: string; arguments: string } }[];
};

/** Counts tokens of a message. Pluggable; the default is ~4 characters per token. */
export type TokenEstimator = (message: Estimable) => number;

const PER_MESSAGE_OVERHEAD = 4; // role + framing, as chat formats add per message
const PER_NON_TEXT_PART = 85; // images/audio cost a flat amount (low-detail image in OpenAI's pricing)

export const estimateTokens: TokenEstimator = (m) => {
  let chars = messageText(m.content).length + (m.name?.length ?? 0);
  for (const call of m.tool_calls ?? []) chars += call.function.name.length + call.function.arguments.length;
  const parts = Array.isArray(m.content) ? m.content : [];
  // A server-tool block (search results, code output) is as long as it is; a tool call's place costs nothing of its own.
  for (const p of parts) if (p.type === "anthropic_block") chars += JSON.stringify(p.block).length;
  const nonText = parts.filter((p) => p.type !== "text" && p.type !== "tool_call" && p.type !== "anthropic_block").length;
  return PER_MESSAGE_OVERHEAD + Math.ceil(chars / 4) + nonText * PER_NON_TEXT_PART;
};

export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * Our counts are estimates and a provider's tokenizer may count more: a budget's reservation takes a quarter
 * more, so a call that costs more than its hold is rare (and is still charged in full).
 */
export const ESTIMATE_MARGIN = 1.25;
