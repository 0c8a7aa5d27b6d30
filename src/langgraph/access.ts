import { authorize, decide } from "../auth/policy";
import { CHECKPOINT_CLOCK_SKEW_MS, uuid6Prefix } from "../core/checkpoint-clock";
import { AppError } from "../core/errors";
import { type Principal, tenantOf } from "../core/principal";
import type { MemoryScope } from "../memory/scope";
import type { Writer } from "../thread/langgraph-checkpoint-types";

/**
 * Who may reach what through the LangGraph routes. Threads are decided by the one policy
 * (src/auth/policy.ts, `reach_thread`: a grant matching `session:t`, refused with BEM-025 as
 * on every other thread route). So are store namespaces (`reach_namespace`: the key's grants
 * match the namespace's scope — admins hold "*"; `system` only when granted, since store items
 * never load into runs).
 */
export const langgraphTenant = (p: Principal): string => tenantOf(p, "LangGraph routes take a tenant key, not the operator key");

export const mayReachScope = (p: Principal, scope: MemoryScope): boolean => decide(p, "reach_namespace", { scope }).allow;

export const mayReachThread = (p: Principal, threadId: string): boolean => decide(p, "reach_thread", { thread: threadId }).allow;

/**
 * Who writes a batch, for the checkpoint store: the key, and whether it may rewrite history —
 * replace what another key wrote, or place a new checkpoint below its namespace's newest
 * (`rewrite_thread`, decided here; the object applies it inside the batch's transaction, where
 * the namespace's checkpoints are known: src/thread/langgraph-order.ts).
 */
export function writerOf(p: Principal, threadId: string): Writer {
  const d = decide(p, "rewrite_thread", { thread: threadId });
  return { key: p.keyId, rewrite: d.allow ? { allowed: true } : { allowed: false, message: d.message } };
}

/**
 * A thread's newest checkpoint is its highest id, and LangGraph writes ids that are UUID v6 of
 * the moment. An id above any the present could write (a UUID of the future, "zzzz") would stay
 * the newest and hide every later checkpoint, so every run by any key would resume from it: that
 * rewrites the thread's history, which needs `rewrite_thread` (BEM-022 otherwise, nothing stored).
 */
export function refuseIdsAhead(ids: readonly string[], writer: Writer, now = Date.now()): void {
  if (writer.rewrite.allowed) return;
  const ceiling = uuid6Prefix(now + CHECKPOINT_CLOCK_SKEW_MS);
  const ahead = ids.find((id) => id > ceiling);
  if (ahead !== undefined)
    throw new AppError(
      "BEM-022",
      `${writer.rewrite.message}: checkpoint id '${ahead.slice(0, 80)}' sorts after any id LangGraph writes now (UUID v6 of the present, a clock at most 5 minutes ahead), so it would stay the thread's newest checkpoint`,
    );
}

export function requireThread(p: Principal, threadId: string): string {
  const tenant = langgraphTenant(p);
  authorize(p, "reach_thread", { thread: threadId });
  return tenant;
}
