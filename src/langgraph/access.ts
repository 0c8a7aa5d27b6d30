import { authorize, decide } from "../auth/policy";
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
 * Who writes a batch, for the checkpoint store: the key, and whether it may replace what another
 * key wrote (`rewrite_thread`, decided here; the object applies it inside the batch's transaction).
 */
export function writerOf(p: Principal, threadId: string): Writer {
  const d = decide(p, "rewrite_thread", { thread: threadId });
  return { key: p.keyId, rewrite: d.allow ? { allowed: true } : { allowed: false, message: d.message } };
}

/** 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch. */
const UUID_EPOCH_OFFSET = 0x01b21dd213814000n;
/** How far ahead of the server's clock a client's clock may run (the webhook replay window's 5 minutes). */
export const CHECKPOINT_CLOCK_SKEW_MS = 5 * 60_000;

/** The leading time fields of a UUID v6 at `ms` (LangGraph's checkpoint ids): every id written by then sorts below it. */
export function uuid6Prefix(ms: number): string {
  const ticks = BigInt(Math.floor(ms)) * 10000n + UUID_EPOCH_OFFSET;
  const hex = (v: bigint, n: number) => v.toString(16).padStart(n, "0");
  return `${hex(ticks >> 28n, 8)}-${hex((ticks >> 12n) & 0xffffn, 4)}-6${hex(ticks & 0xfffn, 3)}`;
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
