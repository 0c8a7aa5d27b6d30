import type { MessageInput } from "../core/message";

/** What reconciliation compares of a message. */
export type ReconcileInput = Pick<MessageInput, "role" | "content" | "tool_calls" | "tool_call_id">;

/**
 * A message's identity for resent-history reconciliation, stored per message at write time. It ignores what
 * clients change when they resend (ids, timestamps, metadata, `name`, null vs "" content, a lone text part vs a
 * string, cache breakpoints, where a tool call sits among the text); tool traffic matches by call id.
 */
export function canonicalMessage(m: ReconcileInput): string {
  if (m.role === "tool") return `tool\u0000${m.tool_call_id ?? ""}`;
  // A call's place among the text (a `tool_call` part) comes with a breakpoint on it or text after it; the calls match by id below.
  const unplaced = Array.isArray(m.content) && m.content.some((p) => p.type === "tool_call") ? m.content.filter((p) => p.type !== "tool_call") : m.content;
  const content = Array.isArray(unplaced) && unplaced.length === 0 ? null : unplaced;
  let text: string;
  if (content == null) text = "";
  else if (typeof content === "string") text = content;
  else if (content.length === 1 && content[0]!.type === "text") text = content[0]!.text;
  // A cache breakpoint is a per-call instruction, not content: Claude Code moves it to the newest message each call.
  else text = JSON.stringify(content.map((p) => ("cache_control" in p ? withoutCache(p) : p)));
  const calls = m.tool_calls?.length ? `\u0000${m.tool_calls.map((t) => t.id).join("\u0001")}` : "";
  return `${m.role}\u0000${text}${calls}`;
}

function withoutCache<T extends { cache_control?: unknown }>(p: T): Omit<T, "cache_control"> {
  const { cache_control: _instruction, ...rest } = p;
  return rest;
}

/** 64 bits as 16 hex chars: FNV-1a and djb2-xor lanes side by side (sync, so usable inside a DO transaction; one pass). */
export function hashString(s: string): string {
  let a = 0x811c9dc5;
  let b = 5381;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = (Math.imul(b, 33) ^ c) | 0;
  }
  return (a >>> 0).toString(16).padStart(8, "0") + ((b ^ s.length) >>> 0).toString(16).padStart(8, "0");
}

export const messageHash = (m: ReconcileInput): string => hashString(canonicalMessage(m));
