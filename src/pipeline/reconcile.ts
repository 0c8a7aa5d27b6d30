import { authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import { ThreadClient, type ThreadEndpoint, type ThreadRun } from "../thread/client";
import { parseThreadId } from "../thread/thread-id";
import type { ReconcileReport, TurnInput } from "./turn";

export type { ReconcileReport } from "./turn";

/**
 * Resent-history reconciliation (README "Resent history"): a stateful request that repeats
 * messages the thread holds stores only the new part; one that diverges from the stored path
 * continues as a branch from the last common checkpoint. System messages are per-call
 * instructions and take no part. An explicit checkpoint_id wins (no reconciliation).
 * Costs one read of O(incoming) rows, and nothing for a request of one new message. Runs in
 * the thread's object (`local`), as the run's first step: no round trip of its own.
 */
export async function reconcileTurn(
  env: Env,
  input: TurnInput,
  local: ThreadEndpoint,
  run: ThreadRun,
): Promise<{ input: TurnInput; report: ReconcileReport | null }> {
  if (input.threadId === undefined || input.checkpointId !== undefined || input.principal.kind !== "tenant") return { input, report: null };
  // Before the thread is read (its hashes, BEM-109) or written (a reset): the key must reach it.
  authorizeThread(input.principal, parseThreadId(input.threadId), false);
  const rest = input.messages.filter((m) => m.role !== "system");
  if (rest.length < 2) return { input, report: { matched: 0, appended: rest.length, branched_from: null } };
  const thread = new ThreadClient(env, input.principal.tenant, input.threadId, { local });
  const r = await thread.reconcile(rest);
  const fresh = rest.slice(r.append_from);
  if (fresh.length === 0)
    throw new AppError("BEM-109", `All ${rest.length} messages are already in thread '${thread.threadId}'; send a new message (or checkpoint_id to branch)`);
  // The divergence lies inside the thread's first checkpoint: the branch starts empty (history keeps the old path).
  if (r.reset) {
    // Emptying the head is a rewrite: the same right as a branch (checked again when the run is admitted).
    authorizeThread(input.principal, thread.threadId, true);
    await thread.update({ ops: [{ op: "remove_all" }] }, "update", { run });
  }
  const systems = input.messages.filter((m) => m.role === "system");
  return {
    input: { ...input, messages: [...systems, ...fresh], ...(r.branch_from !== null ? { checkpointId: r.branch_from } : {}) },
    report: { matched: r.matched, appended: fresh.length, branched_from: r.branch_from },
  };
}
