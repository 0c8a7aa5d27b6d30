import { AppError } from "../core/errors";
import { ThreadClient } from "../thread/client";
import { D1FactsBackend } from "./d1-facts-backend";
import type { TurnFactsCache } from "./facts-cache";
import { MemoryManager, type MemoryManagerOptions } from "./manager";
import { SessionBackend, type SessionThread } from "./session-backend";
import type { ContextStrategy, MemoryBackend } from "./types";
import { emptyLayer } from "./types";

/**
 * The production MemoryManager for one tenant (use principal.tenant; '' is the
 * operator, whose only scope is `system`). Every store it touches is bound to that tenant.
 *
 * Facts of every scope live in D1; turns only in sessions (the thread's object).
 * Other scopes hold no turns, so loading their turns costs nothing (no storage call).
 */
export function memoryFor(
  env: Env,
  tenant: string,
  opts: MemoryManagerOptions & {
    strategy?: ContextStrategy;
    /** Serves one thread's session differently (a run's window preloaded under its lease); others open normally. */
    session?: { threadId: string; thread: SessionThread };
    /** Where facts are read and written: a D1 session (memory/bookmark.ts); env.DB when absent. */
    facts?: Pick<D1Database, "prepare" | "batch">;
    /** A run's view of its thread object's facts cache (facts-cache.ts). */
    factsCache?: TurnFactsCache;
  } = {},
): MemoryManager {
  const own = opts.session;
  const facts = new D1FactsBackend(opts.facts ?? env.DB, tenant, Date.now, opts.factsCache);
  const session = new SessionBackend((threadId) => (own && own.threadId === threadId ? own.thread : new ThreadClient(env, tenant, threadId)));
  const backend: MemoryBackend = {
    async loadLayer(scope, limits) {
      const [f, t] = await Promise.all([
        limits.facts === undefined ? emptyLayer() : facts.loadLayer(scope, limits.rank ? { facts: limits.facts, rank: limits.rank } : { facts: limits.facts }),
        limits.turns === undefined || !scope.isSession
          ? emptyLayer()
          : session.loadLayer(scope, limits.recall ? { turns: limits.turns, recall: limits.recall } : { turns: limits.turns }),
      ]);
      return {
        facts: f.facts,
        factsDropped: f.factsDropped,
        ...(f.skipped ? { skipped: f.skipped } : {}),
        turns: t.turns,
        turnsTruncated: t.turnsTruncated,
        ...(t.recalled ? { recalled: t.recalled } : {}),
        ...(t.warnings ? { warnings: t.warnings } : {}),
      };
    },
    async appendLayer(scope, item) {
      if (item.type === "fact") return facts.appendLayer(scope, item);
      if (scope.isSession) return session.appendLayer(scope, item);
      throw new AppError("BEM-060", `Only session scopes hold turns; '${scope.toString()}' holds facts`);
    },
    forget: (id) => facts.forget(id),
  };
  return new MemoryManager(backend, opts.strategy, opts);
}
