import { ThreadClient } from "../thread/client";
import { D1FactsBackend } from "./d1-facts-backend";
import { D1TurnsBackend } from "./d1-turns-backend";
import { LayeredBackend } from "./layered-backend";
import { MemoryManager, type MemoryManagerOptions } from "./manager";
import { SessionBackend, type SessionThread } from "./session-backend";
import type { ContextStrategy } from "./types";

/**
 * The production MemoryManager for one tenant (use principal.tenant; '' is the
 * operator, whose only scope is `system`). Every store it touches is bound to that tenant.
 */
export function memoryFor(
  env: Env,
  tenant: string,
  opts: MemoryManagerOptions & {
    strategy?: ContextStrategy;
    /** Serves one thread's session differently (a run's window preloaded under its lease); others open normally. */
    session?: { threadId: string; thread: SessionThread };
  } = {},
): MemoryManager {
  const own = opts.session;
  const backend = new LayeredBackend({
    facts: new D1FactsBackend(env.DB, tenant),
    turns: new D1TurnsBackend(env.DB, tenant),
    session: new SessionBackend((threadId) => (own && own.threadId === threadId ? own.thread : new ThreadClient(env, tenant, threadId))),
  });
  return new MemoryManager(backend, opts.strategy, opts);
}
