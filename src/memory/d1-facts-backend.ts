import { OPERATOR_TENANT } from "../auth/principal";
import { AppError } from "../errors";
import { IdGenerator } from "../thread/ids";
import { factTokens, type Fact } from "./facts";
import { ownerTenant, type MemoryScope } from "./scope";
import { emptyLayer, type LayerLimits, type LayerLoad, type MemoryBackend, type MemoryItem } from "./types";

const ids = new IdGenerator();
const COLUMNS = "id, scope, kind, text, tokens, created_at";
/** Rows fetched per round trip while filling a budget; grows so big budgets need few trips. */
const FIRST_PAGE = 16;
const MAX_PAGE = 256;

export type FactCursor = { created_at: number; id: string };

/**
 * Facts of every scope in D1, bound to one tenant: every query carries tenant_id.
 * The `system` scope is operator-wide: stored under tenant '' and readable by every
 * tenant, writable only through the operator's backend (tenant '').
 */
export class D1FactsBackend implements MemoryBackend {
  constructor(
    /** The database, or a session of it (reads may come from a replica; see memory/bookmark.ts). */
    private readonly db: Pick<D1Database, "prepare">,
    readonly tenant: string,
  ) {}

  async loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad> {
    const out = emptyLayer();
    if (limits.facts === undefined) return out;
    const owner = ownerTenant(scope, this.tenant);
    const key = scope.toString();
    let room = limits.facts;
    let after: FactCursor = { created_at: -1, id: "" };
    let page = FIRST_PAGE;
    // Keyset pages in creation order until one fact does not fit: O(kept), not O(all facts).
    for (;;) {
      const rows = await this.page(owner, key, after, page);
      for (const f of rows) {
        if (f.tokens > room) {
          out.factsDropped = await this.countFrom(owner, key, after);
          return out;
        }
        out.facts.push(f);
        room -= f.tokens;
        after = f;
      }
      if (rows.length < page) return out;
      page = Math.min(page * 2, MAX_PAGE);
    }
  }

  async appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string> {
    if (item.type !== "fact") throw new AppError("BEM-001", undefined, { internal: "D1FactsBackend stores facts only" });
    return (await this.remember(scope, item.kind, item.text)).id;
  }

  /** Stores a fact (kind and text validated by the caller). */
  async remember(scope: MemoryScope, kind: string, text: string): Promise<Fact> {
    // Defence in depth behind the route checks: system facts only from the operator, and the operator only those.
    if (scope.isSystem !== (this.tenant === OPERATOR_TENANT)) {
      throw new AppError("BEM-023", scope.isSystem ? "Only the operator key writes system facts" : "The operator key writes only the system scope");
    }
    const base = { id: ids.next(), scope: scope.toString(), kind, text, created_at: Date.now() };
    const fact: Fact = { ...base, tokens: factTokens(base) };
    await this.db
      .prepare("INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(fact.id, this.tenant, fact.scope, fact.kind, fact.text, fact.tokens, fact.created_at)
      .run();
    return fact;
  }

  async forget(id: string): Promise<boolean> {
    const res = await this.db.prepare("DELETE FROM facts WHERE tenant_id = ? AND id = ?").bind(this.tenant, id).run();
    return res.meta.changes > 0;
  }

  /** A fact this tenant owns (system facts belong to the operator), or null. */
  async get(id: string): Promise<Fact | null> {
    return this.db.prepare(`SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND id = ?`).bind(this.tenant, id).first<Fact>();
  }

  /** One page of a scope's facts in creation order, after `after`. */
  list(scope: MemoryScope, limit: number, after?: FactCursor): Promise<Fact[]> {
    return this.page(ownerTenant(scope, this.tenant), scope.toString(), after ?? { created_at: -1, id: "" }, limit);
  }

  private async page(owner: string, scope: string, after: FactCursor, limit: number): Promise<Fact[]> {
    const { results } = await this.db
      .prepare(`SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND scope = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`)
      .bind(owner, scope, after.created_at, after.id, limit)
      .all<Fact>();
    return results;
  }

  private async countFrom(owner: string, scope: string, after: FactCursor): Promise<number> {
    const row = await this.db
      .prepare("SELECT COUNT(*) AS n FROM facts WHERE tenant_id = ? AND scope = ? AND (created_at, id) > (?, ?)")
      .bind(owner, scope, after.created_at, after.id)
      .first<{ n: number }>();
    return row?.n ?? 0;
  }
}
