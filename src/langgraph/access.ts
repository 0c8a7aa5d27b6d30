import { grantsAllow } from "../auth/grants";
import type { Principal } from "../auth/principal";
import { AppError } from "../errors";
import { MemoryScope } from "../memory/scope";

/**
 * Who may reach what through the LangGraph routes, in one place (so moving to
 * the shared auth policy is one edit): a tenant key only, its own tenant only;
 * an admin reaches every thread and namespace of the tenant, a member the thread
 * t iff its grants match `session:t`, and a namespace iff its grants match the
 * namespace's scope.
 */
export function tenantOf(p: Principal): string {
  if (p.kind !== "tenant") throw new AppError("BEM-022", "LangGraph routes take a tenant key, not the operator key");
  return p.tenant;
}

export const mayReachScope = (p: Principal, scope: MemoryScope): boolean => p.role === "admin" || grantsAllow(p.grants, scope);

export function mayReachThread(p: Principal, threadId: string): boolean {
  return p.role === "admin" || grantsAllow(p.grants, MemoryScope.session(threadId));
}

export function requireThread(p: Principal, threadId: string): string {
  const tenant = tenantOf(p);
  if (!mayReachThread(p, threadId)) throw new AppError("BEM-023", `Thread '${threadId}' is outside the key's grants (needs session:${threadId})`);
  return tenant;
}
