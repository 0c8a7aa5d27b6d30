import { tryJson } from "../providers/adapter";
import { assistantBlocks } from "../providers/anthropic";
import type { TurnResult } from "../pipeline/turn";
import type { TurnUsage } from "../pipeline/usage";
import type { MessageResponse } from "./schema";

/** A turn's result → Anthropic's Message (pure). */

export const messageId = (): string => `msg_${crypto.randomUUID().replaceAll("-", "")}`;

type StopReason = MessageResponse["stop_reason"];
const ANTHROPIC_STOPS = new Set<string>(["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]);

/** Anthropic's own stop reason when the upstream was Anthropic; else mapped from the portable finish reason. */
export function stopReasonOf(r: Pick<TurnResult, "finishReason" | "stop">): { stop_reason: StopReason; stop_sequence: string | null } {
  if (r.stop && ANTHROPIC_STOPS.has(r.stop.reason)) return { stop_reason: r.stop.reason as StopReason, stop_sequence: r.stop.sequence };
  const mapped: StopReason =
    r.finishReason === "length" ? "max_tokens" : r.finishReason === "tool_calls" ? "tool_use" : r.finishReason === "content_filter" ? "refusal" : "end_turn";
  return { stop_reason: mapped, stop_sequence: null };
}

/** Anthropic counts cached prompt tokens apart from input_tokens; ours include them. */
export function usageOf(u: TurnUsage): MessageResponse["usage"] {
  const creation = u.cache?.creation ?? null;
  const read = u.cache?.read ?? null;
  return {
    input_tokens: Math.max(0, u.prompt_tokens - (creation ?? 0) - (read ?? 0)),
    output_tokens: u.completion_tokens,
    cache_creation_input_tokens: creation,
    cache_read_input_tokens: read,
    ...(u.server_tool_use ? { server_tool_use: u.server_tool_use } : {}),
  };
}

/** Tool arguments are a JSON string inside; Anthropic's tool_use.input is an object. */
export function toolInput(args: string): Record<string, unknown> {
  const parsed = args.trim() === "" ? {} : tryJson(args);
  return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { _raw_arguments: args };
}

/** The reply's blocks: as the upstream gave them when it kept its parts (server tools, citations, order), else thinking, text, tool use. */
export function contentOf(reply: TurnResult["reply"]): MessageResponse["content"] {
  if (reply.parts) return assistantBlocks({ content: reply.parts, tool_calls: reply.tool_calls }, "reply") as MessageResponse["content"];
  const content: MessageResponse["content"] = [...(reply.thinking ?? [])];
  if (reply.content) content.push({ type: "text", text: reply.content });
  for (const c of reply.tool_calls ?? []) content.push({ type: "tool_use", id: c.id, name: c.function.name, input: toolInput(c.function.arguments) });
  return content;
}

export function turnToMessage(r: TurnResult, id: string, edgeweave: Record<string, unknown>): MessageResponse {
  return {
    id,
    type: "message",
    role: "assistant",
    model: r.model.name,
    content: contentOf(r.reply),
    ...stopReasonOf(r),
    usage: usageOf(r.usage),
    edgeweave,
  };
}
