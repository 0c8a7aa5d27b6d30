import type { Message } from "../../thread/message";
import { remove, type MessageOp } from "../state";
import { repairToolPairs } from "./tool-pairs";
import type { Middleware } from "./types";

export type DeleteOldOptions = {
  /** How many turns to keep. A turn is a user message and everything after it up to the next user message. */
  keep: number;
  /** Keep system messages older than the kept turns (summaries, pinned instructions). Default true. */
  keepSystem?: boolean;
};

/**
 * The message ops that delete every turn but the newest `keep`: remove(id) for
 * each deleted message, plus a replacement for any assistant message whose tool
 * calls lost their results (repairToolPairs over what remains). Empty = no-op.
 */
export function deleteOldTurns(messages: readonly Message[], opts: DeleteOldOptions): MessageOp[] {
  const keepSystem = opts.keepSystem ?? true;
  let turnsSeen = 0;
  let boundary = -1; // index of the first user message of the kept turns
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role !== "user") continue;
    if (++turnsSeen === opts.keep) {
      boundary = i;
      break;
    }
  }
  if (boundary <= 0) return []; // fewer turns than `keep`, or nothing before them
  const removed = new Set<string>();
  const remaining: Message[] = [];
  messages.forEach((m, i) => {
    if (i < boundary && !(keepSystem && m.role === "system")) removed.add(m.id);
    else remaining.push(m);
  });
  const repaired = repairToolPairs(remaining);
  const survivors = new Map(repaired.map((m) => [m.id, m]));
  const ops: MessageOp[] = [];
  for (const m of messages) {
    if (removed.has(m.id) || !survivors.has(m.id)) ops.push(remove(m.id));
    else if (survivors.get(m.id) !== m) ops.push(survivors.get(m.id)!); // same id: replaced in place
  }
  return ops;
}

/** after_model middleware keeping the newest `keep` turns. */
export function deleteOld(opts: DeleteOldOptions): Middleware {
  return {
    name: "delete_old",
    rewritesHistory: true,
    afterModel(state) {
      const ops = deleteOldTurns(state.messages, opts);
      return ops.length ? { messages: ops } : undefined;
    },
  };
}
