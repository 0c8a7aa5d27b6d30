import { authorize, decide } from "../auth/policy";
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

export function requireThread(p: Principal, threadId: string): string {
  const tenant = langgraphTenant(p);
  authorize(p, "reach_thread", { thread: threadId });
  return tenant;
}
