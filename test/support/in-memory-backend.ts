import { IdGenerator } from "../../src/core/ids";
import { estimateTokens, type TokenEstimator } from "../../src/core/tokens";
import { FactRoom, factTokens, type Fact } from "../../src/memory/facts";
import type { MemoryScope } from "../../src/memory/scope";
import { emptyLayer, type LayerLimits, type LayerLoad, type MemoryBackend, type MemoryItem, type TokenedMessage } from "../../src/memory/types";

/**
 * A process-local backend for unit tests with no persistence, no tenancy and
 * no size limits. Production uses the D1 and thread-object backends (see for-tenant.ts).
 */
export class InMemoryBackend implements MemoryBackend {
  private readonly facts = new Map<string, Fact[]>();
  private readonly turns = new Map<string, TokenedMessage[]>();
  private readonly ids = new IdGenerator();

  constructor(private readonly estimate: TokenEstimator = estimateTokens) {}

  async loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad> {
    const out = emptyLayer();
    const key = scope.toString();
    if (limits.facts !== undefined) {
      const room = new FactRoom(limits.facts);
      const all = this.facts.get(key) ?? [];
      for (const f of all) {
        if (!room.take(f)) break;
        out.facts.push(f);
      }
      out.factsDropped = all.length - out.facts.length;
    }
    if (limits.turns !== undefined) {
      let room = limits.turns;
      const all = this.turns.get(key) ?? [];
      let start = all.length;
      while (start > 0 && all[start - 1]!.tokens <= room) room -= all[--start]!.tokens;
      out.turns = all.slice(start);
      out.turnsTruncated = start > 0;
    }
    return out;
  }

  async appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string> {
    const key = scope.toString();
    if (item.type === "turn") {
      const list = this.turns.get(key) ?? [];
      list.push({ message: item.message, tokens: this.estimate(item.message) });
      this.turns.set(key, list);
      return item.message.id;
    }
    const now = Date.now();
    const base = {
      id: this.ids.next(),
      scope: key,
      kind: item.kind,
      text: item.text,
      created_at: now,
      key: null,
      expires_at: null,
      updated_at: now,
      version: 1,
      written_by: "model" as const,
    };
    const list = this.facts.get(key) ?? [];
    list.push({ ...base, tokens: factTokens(base.text) });
    this.facts.set(key, list);
    return base.id;
  }

  async forget(id: string): Promise<boolean> {
    for (const list of [...this.facts.values(), ...this.turns.values()]) {
      const i = list.findIndex((x) => ("message" in x ? x.message.id : x.id) === id);
      if (i >= 0) {
        list.splice(i, 1);
        return true;
      }
    }
    return false;
  }
}
