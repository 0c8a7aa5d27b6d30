import { ThreadClient } from "../thread/client";
import { D1FactsBackend } from "./d1-facts-backend";
import { D1TurnsBackend } from "./d1-turns-backend";
import { LayeredBackend } from "./layered-backend";
import { MemoryManager, type MemoryManagerOptions } from "./manager";
import { SessionBackend } from "./session-backend";
import type { ContextStrategy } from "./types";

/**
 * The production MemoryManager for one tenant (use principal.tenant; '' is the
 * operator, whose only scope is `system`). Every store it touches is bound to that tenant.
 */
export function memoryFor(env: Env, tenant: string, opts: MemoryManagerOptions & { strategy?: ContextStrategy } = {}): MemoryManager {
  const backend = new LayeredBackend({
    facts: new D1FactsBackend(env.DB, tenant),
    turns: new D1TurnsBackend(env.DB, tenant),
    session: new SessionBackend((threadId) => new ThreadClient(env, tenant, threadId)),
  });
  return new MemoryManager(backend, opts.strategy, opts);
}
