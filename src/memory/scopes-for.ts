import { grantsAllow } from "../auth/grants";
import type { Principal } from "../auth/principal";
import { AppError } from "../errors";
import { MemoryScope } from "./scope";

/**
 * Who may touch which memory scope. Decisions:
 * - `system` facts are operator-wide rules: every key may read them; only the operator writes them.
 * - The operator key holds only the `system` scope (it manages tenants via /v1/admin).
 * - Tenant admins hold "*": every scope of their tenant, any session included.
 * - Members read the current thread's session (in a run) and whatever their grants match;
 *   another thread's session only through a grant such as "session:*". They write facts
 *   only in scopes their grants match.
 * Refusals are BEM-023 (BEM-022 for a non-operator writing `system`); never rewritten.
 */
export function canRead(principal: Principal, scope: MemoryScope, currentThread?: string): boolean {
  if (scope.isSystem) return true;
  if (principal.kind === "operator") return false;
  if (scope.isSession && currentThread !== undefined && scope.id === currentThread) return true;
  return grantsAllow(principal.grants, scope);
}

export function assertCanRead(principal: Principal, scope: MemoryScope, currentThread?: string): void {
  if (!canRead(principal, scope, currentThread)) {
    throw new AppError("BEM-023", `Scope '${scope}' is outside this key's grants`);
  }
}

export function assertCanWriteFact(principal: Principal, scope: MemoryScope): void {
  if (scope.isSystem) {
    if (principal.kind !== "operator") throw new AppError("BEM-022", "Only the operator key writes system facts");
    return;
  }
  if (principal.kind === "operator") throw new AppError("BEM-023", "The operator key writes only the system scope");
  if (!grantsAllow(principal.grants, scope)) throw new AppError("BEM-023", `Scope '${scope}' is outside this key's grants`);
}

export type ScopeRequest = {
  principal: Principal;
  /** The thread of this run: its session is the default layer. */
  sessionId: string;
  /** Layers configured for the agent (models.yaml); bare "session" means this run's session. */
  agentScopes?: readonly unknown[];
  /** The client's metadata.memory_scopes: may only narrow to scopes the key may read. */
  requested?: readonly unknown[];
};

/**
 * The memory layers of one run, decided from the principal, never taken on trust:
 * - default: [session:<sessionId>];
 * - an agent's configured layers come first, the session appended last unless they name it
 *   (agent config is deployment config, trusted; every layer still loads within the caller's tenant);
 * - a client's `requested` list replaces them only if EVERY scope is readable by the key;
 *   one scope outside → BEM-023 for the whole request (nothing silently dropped or rewritten).
 */
export function resolveScopes(req: ScopeRequest): MemoryScope[] {
  const session = MemoryScope.session(req.sessionId);
  if (req.requested !== undefined) {
    const scopes = req.requested.map((raw) => (raw === "session" ? session : MemoryScope.parse(raw)));
    for (const s of scopes) assertCanRead(req.principal, s, req.sessionId);
    return uniq(scopes);
  }
  const layers = (req.agentScopes ?? []).map((raw) => (raw === "session" ? session : MemoryScope.parse(raw)));
  if (!layers.some((s) => s.equals(session))) layers.push(session);
  return uniq(layers);
}

function uniq(scopes: MemoryScope[]): MemoryScope[] {
  const seen = new Set<string>();
  return scopes.filter((s) => !seen.has(s.toString()) && (seen.add(s.toString()), true));
}
