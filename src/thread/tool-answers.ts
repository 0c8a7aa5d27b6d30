import { AppError } from "../core/errors";

/**
 * A tool message must answer a tool call that is still open: one the newest
 * assistant message made and no tool message has answered yet. An orphan
 * (unknown id, an id already answered, or a call a later message superseded)
 * is refused with BEM-096 instead of being stored, where it would poison every
 * later turn (providers reject a conversation holding one).
 */
export type ToolTurn = { role: string; tool_calls?: readonly { id: string }[] | null; tool_call_id?: string | null };

/** The calls still open after `newestFirst` (a thread's messages, newest first; read lazily and only back to the newest assistant or user message). */
export function openToolCalls(newestFirst: Iterable<ToolTurn>): Set<string> {
  const answered = new Set<string>();
  for (const m of newestFirst) {
    if (m.role === "tool") {
      if (m.tool_call_id) answered.add(m.tool_call_id);
      continue;
    }
    if (m.role === "assistant") return new Set((m.tool_calls ?? []).map((c) => c.id).filter((id) => !answered.has(id)));
    if (m.role === "user") return new Set();
  }
  return new Set();
}

/** Follows messages in order and throws BEM-096 at the first tool message that answers no open call. */
export class ToolAnswerCheck {
  constructor(private open: Set<string> = new Set()) {}

  next(m: ToolTurn): void {
    if (m.role === "assistant") this.open = new Set((m.tool_calls ?? []).map((c) => c.id));
    else if (m.role === "user") this.open = new Set();
    else if (m.role === "tool") {
      const id = m.tool_call_id ?? "";
      if (!this.open.has(id)) {
        throw new AppError(
          "BEM-096",
          `Tool message for '${id.slice(0, 64)}' answers no open tool call (the newest assistant message must have made that call, and it must not be answered yet)`,
        );
      }
      this.open.delete(id);
    }
  }

  /** Everything stored was removed: nothing is open any more. */
  reset(): void {
    this.open = new Set();
  }
}

/** Checks `incoming` (in order) against the calls open at the end of `history` (oldest first). */
export function checkToolAnswers(history: readonly ToolTurn[], incoming: readonly ToolTurn[]): void {
  if (!incoming.some((m) => m.role === "tool")) return;
  const check = new ToolAnswerCheck(openToolCalls([...history].reverse()));
  for (const m of incoming) check.next(m);
}
