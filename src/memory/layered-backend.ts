import type { MemoryScope } from "./scope";
import type { LayerLimits, LayerLoad, MemoryBackend, MemoryItem } from "./types";

/**
 * Routes each kind of item to the store that holds it: facts of every scope to
 * `facts`, session turns to `session` (the thread object), other turns to `turns`.
 */
export class LayeredBackend implements MemoryBackend {
  constructor(private readonly parts: { facts: MemoryBackend; turns: MemoryBackend; session: MemoryBackend }) {}

  private turnsOf(scope: MemoryScope): MemoryBackend {
    return scope.isSession ? this.parts.session : this.parts.turns;
  }

  async loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad> {
    const [f, t] = await Promise.all([
      this.parts.facts.loadLayer(scope, limits.rank ? { facts: limits.facts, rank: limits.rank } : { facts: limits.facts }),
      this.turnsOf(scope).loadLayer(scope, { turns: limits.turns }),
    ]);
    return { facts: f.facts, factsDropped: f.factsDropped, ...(f.skipped ? { skipped: f.skipped } : {}), turns: t.turns, turnsTruncated: t.turnsTruncated };
  }

  appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string> {
    return item.type === "fact" ? this.parts.facts.appendLayer(scope, item) : this.turnsOf(scope).appendLayer(scope, item);
  }

  async forget(id: string): Promise<boolean> {
    return (await this.parts.facts.forget(id)) || (await this.parts.turns.forget(id));
  }
}
