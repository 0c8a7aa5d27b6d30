import { hashString } from "../thread/message-hash";
import type { MessageParam } from "./schema";

/**
 * Claude Code session threads (opt-in: docs/guides/anthropic-and-claude-code.md).
 * Claude Code names its session in `x-claude-code-session-id`; with `x-edgeweave-claude-session:
 * thread` each conversation of the session is kept in thread `cc-<session>-<digest>`, where the
 * digest is that of the conversation's first message. So `--continue` (same session, same first
 * message) keeps its thread; a subagent or a side request of the session (another first message)
 * gets its own; and `/compact`, which restarts the conversation from a summary, continues in a
 * new thread of the same session instead of branching the old one — a branch would need the
 * rewrite right, which member keys do not have. `session:cc-*` grants a member key every session.
 */
export const CLAUDE_SESSION_HEADER = "x-claude-code-session-id";
export const CLAUDE_SESSION_MODE_HEADER = "x-edgeweave-claude-session";
export const SESSION_THREAD_PREFIX = "cc-";

export function sessionThreadId(sessionId: string, first: MessageParam): string {
  return `${SESSION_THREAD_PREFIX}${sessionId}-${hashString(JSON.stringify(withoutBreakpoints(first)))}`;
}

/**
 * The message without its cache breakpoints (its blocks', and those inside a tool_result's content):
 * Claude Code puts one on the newest message of each call, so the first message has it on the first
 * call only; it is a per-call instruction, as reconciliation takes it (thread/message-hash.ts), not
 * part of which conversation this is. A message without breakpoints digests as before.
 */
function withoutBreakpoints(m: MessageParam): unknown {
  const strip = (b: unknown): unknown => {
    if (typeof b !== "object" || b === null || Array.isArray(b)) return b;
    const { cache_control: _perCall, ...rest } = b as Record<string, unknown>;
    return Array.isArray(rest.content) ? { ...rest, content: rest.content.map(strip) } : rest;
  };
  return typeof m.content === "string" ? m : { ...m, content: m.content.map(strip) };
}
