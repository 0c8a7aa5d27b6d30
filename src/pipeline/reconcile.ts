import { authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import type { ThreadRoom } from "./thread-room";
import type { ReconcileReport, TurnInput } from "./turn";

export type { ReconcileReport } from "./turn";

/**
 * Resent-history reconciliation (README "Resent history"): a stateful request that repeats
 * messages the thread holds stores only the new part; one that diverges from the stored path
 * continues as a branch from the last common checkpoint. System messages are per-call
 * instructions and take no part. An explicit checkpoint_id wins (no reconciliation).
 * Costs one read of O(incoming) rows, and nothing for a request of one new message. Runs in
 * the thread's object, as the run's first step, under its lease.
 */
export async function reconcileTurn(input: TurnInput, room: ThreadRoom): Promise<{ input: TurnInput; report: ReconcileReport | null }> {
  if (input.checkpointId !== undefined) return { input, report: null };
  const rest = input.messages.filter((m) => m.role !== "system");
  if (rest.length < 2) return { input, report: { matched: 0, appended: rest.length, branched_from: null } };
  // The thread's reach was checked where the run was admitted (run-in-object.ts), before it was handed here.
  const r = room.log.reconcile(rest);
  const fresh = rest.slice(r.append_from);
  if (fresh.length === 0)
    throw new AppError("BEM-109", `All ${rest.length} messages are already in thread '${room.threadId}'; send a new message (or checkpoint_id to branch)`);
  // Branching, or emptying the head, is a rewrite, decided here: the same right as a checkpoint_id (admission checked the reach).
  if (r.reset || r.branch_from !== null) authorizeThread(input.principal, room.threadId, true);
  // The divergence lies inside the thread's first checkpoint: the branch starts empty (history keeps the old path).
  if (r.reset) await room.write({ ops: [{ op: "remove_all" }] }, "update");
  const systems = input.messages.filter((m) => m.role === "system");
  return {
    input: { ...input, messages: [...systems, ...fresh], ...(r.branch_from !== null ? { checkpointId: r.branch_from } : {}) },
    report: { matched: r.matched, appended: fresh.length, branched_from: r.branch_from },
  };
}
