import { OPERATOR_TENANT } from "../core/principal";
import type { EmbedHolder } from "../embed/embed-cache";
import { AppError } from "../core/errors";
import { balanced } from "../core/sql-tree";
import { IdGenerator } from "../core/ids";
import { FactRoom, factTokens, fitWhole, type Fact, type FactWriter } from "./facts";
import { factTextHash } from "./fact-text-hash";
import { searchTerms } from "../core/search-terms";
import { EMBEDDED_ID, loadWordTable } from "../embed/embedded";
import { factsEmbedder } from "../embed/embedders";
import { remoteQueryVector } from "./fact-vectors";
import type { EmbedCache } from "../embed/embed-cache";
import { nearest, quantize } from "../embed/vectors";
import { backgroundVectors, embedWords, type WordTable } from "../embed/word-table";
import { markedText, tenantMark } from "./tenant-words";
import { bm25Statement, PREFIX_MAX_FACTS, Params, type Reach } from "./bm25-search";
import { type Channels, DENSE_WEIGHT, fuseScores } from "../embed/fusion";
import { rankedLayer, type FactSource, type ScoredFact } from "./rank";
import { ownerTenant, type MemoryScope } from "./scope";
import type { TurnFactsCache } from "./facts-cache";
import { emptyLayer, type LayerLimits, type LayerLoad, type MemoryBackend, type MemoryItem } from "./types";

const ids = new IdGenerator();

/** Live facts of a scope the dense channel compares with a query at most (the newest): a bound on one load's read. */
const DENSE_SCAN = 5000;
/** Candidates each channel gives a recall's fusion (the dense floor is the score at rank 50, fusion.ts). */
const RECALL_POOL = 50;

/** A fact recalled by the memory tools: its fused score and the channels that found it. */
export type RecalledFact = ScoredFact & { channels: Channels };

type VectorRow = Fact & { vec: ArrayBuffer | number[] | null; vec_by: string | null };

const int8 = (vec: ArrayBuffer | number[]) => new Int8Array(Array.isArray(vec) ? vec : new Uint8Array(vec));

/**
 * The rows closest in meaning to `query`. The embedded table: another embedder's or a missing vector is embedded
 * from the text here. A remote embedder (`remoteId`): only its own vectors count (the others wait for fact-vectors.ts).
 */
function nearestFacts(
  table: WordTable | undefined,
  remote: EmbedCache | undefined,
  rows: readonly VectorRow[],
  query: Float32Array,
  limit: number,
): { near: ScoredFact[]; floor?: number } {
  const items = rows.flatMap(({ vec, vec_by, ...fact }) => {
    if (remote) return vec && vec_by === remote.id ? [{ item: fact, vec: int8(vec) }] : [];
    if (vec && vec_by === EMBEDDED_ID) return [{ item: fact, vec: int8(vec) }];
    return table ? [{ item: fact, vec: new Int8Array(quantize(embedWords(table, fact.text)).buffer) }] : [];
  });
  // The embedder's background ranks a small set (vectors.ts nearest): the table's random text, a remote one's sentences.
  const { hits, floor } = nearest(items, query, limit, remote ? remote.background() : table && backgroundVectors(table));
  return { near: hits.map(({ item, score }) => ({ ...item, score: Math.round(score * 1e6) / 1e6 })), ...(floor !== undefined ? { floor } : {}) };
}

/** Exact scopes, each with its owning tenant (system facts are the operator's). */
async function inScopes(scopes: readonly { owner: string; scope: string }[]): Promise<Reach> {
  return {
    marks: await Promise.all([...new Set(scopes.map((s) => s.owner))].map(tenantMark)),
    where: (p) =>
      balanced(
        scopes.map((s) => `tenant_id = ${p.ref(s.owner)} AND scope = ${p.ref(s.scope)}`),
        "OR",
      ),
  };
}
const COLUMNS = "id, scope, kind, text, tokens, created_at, key, expires_at, updated_at, version, written_by";
const F_COLUMNS = COLUMNS.split(", ")
  .map((c) => `f.${c}`)
  .join(", ");
/** Not expired at the bound time (expired facts never load, even before the purge removes them). */
const LIVE = "(expires_at IS NULL OR expires_at > ?)";
/** Rows fetched per round trip while filling a budget; grows so big budgets need few trips. */
const FIRST_PAGE = 32;
const MAX_PAGE = 256;

export type FactCursor = { created_at: number; id: string };
/**
 * `maxFacts`: the tenant's fact quota, held in the write itself (a new fact past it is not stored: 413 BEM-018).
 * `writtenBy` decides whether the fact loads as a rule or as data (facts.ts isRule); default `model`, the data side.
 */
export type RememberOptions = { key?: string | null; expiresAt?: number | null; now?: number; maxFacts?: number; writtenBy?: FactWriter };
/** The stored fact and whether it replaced an earlier text under the same key. */
export type Remembered = Fact & { replaced: boolean; existing: boolean };
export type FactVersion = { version: number; kind: string; text: string; written_at: number; replaced_at: number };
export type ListFilter = { kind?: string; key?: string };
export type { ScoredFact } from "./rank";

type Stats = { n: number | null; tokens: number | null };

/** Live facts and their tokens in a scope: the triggers' stats row less expired rows the purge has not reached. */
function liveStats(all: Stats | undefined, expired: Stats | undefined): { n: number; tokens: number } {
  return { n: Math.max(0, (all?.n ?? 0) - (expired?.n ?? 0)), tokens: Math.max(0, (all?.tokens ?? 0) - (expired?.tokens ?? 0)) };
}

/** A search's raw BM25 (bm25-search.ts): higher is more relevant, rounded to 6 decimals as the report shows it. */
const scored = ({ score, ...f }: Fact & { score: number }): ScoredFact => ({ ...f, score: Math.round(score * 1e6) / 1e6 });

/**
 * A search's answer, best first, each scored by its BM25 over the best match's: 1 for the best, lower
 * for weaker matches, comparable within the answer (a raw BM25's scale moves with the searched facts'
 * size, so the ratio is what a client can read).
 */
function relativeScores(rows: readonly (Fact & { score: number })[]): ScoredFact[] {
  const best = rows[0]?.score ?? 0;
  return rows.map(({ score, ...f }) => ({ ...f, score: best > 0 ? Math.round((score / best) * 1e4) / 1e4 : 0 }));
}

/**
 * Facts of every scope in D1, bound to one tenant: every query carries tenant_id.
 * The `system` scope is operator-wide: stored under tenant '' and readable by every
 * tenant, writable only through the operator's backend (tenant '').
 */
export class D1FactsBackend implements MemoryBackend {
  constructor(
    /** The database, or a session of it (reads may come from a replica; see memory/bookmark.ts). */
    private readonly db: Pick<D1Database, "prepare" | "batch">,
    readonly tenant: string,
    private readonly clock: () => number = Date.now,
    /** A run's view of its thread object's cache (facts-cache.ts): scopes read whole are served from it while fresh. */
    private readonly cache?: TurnFactsCache,
    /** The budgets a remote embedder's query call is held against (a run's); none outside a run. */
    private readonly holder?: EmbedHolder,
  ) {}

  /**
   * A scope's live facts within `limits.facts`. One batch reads the scope's stats row (count,
   * token sum) and its first page in creation order: when they all fit, that is the whole
   * load (one round trip for up to FIRST_PAGE facts); when they do not, they load in the
   * ranked order of rank.ts (always-kinds, relevance to `limits.rank.query`, recency) with
   * one more. Either way O(what is kept) rows, whatever the scope's size.
   */
  async loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad> {
    const out = emptyLayer();
    if (limits.facts === undefined) return out;
    const owner = ownerTenant(scope, this.tenant);
    const key = scope.toString();
    const now = this.clock();
    const start: FactCursor = { created_at: -1, id: "" };
    const cached = this.cache?.get(owner, key)?.filter((f) => f.expires_at === null || f.expires_at > now);
    // A scope that fits whole loads every live fact in creation order: the cached read, without a round trip.
    if (cached && fitWhole(cached, limits.facts)) return { ...out, facts: cached };
    const [all, expired, first] = await this.batched([
      this.db.prepare("SELECT n, tokens FROM fact_scope_stats WHERE tenant_id = ? AND scope = ?").bind(owner, key),
      // The partial expiry index keeps this to the few expired rows awaiting the hourly purge.
      this.db.prepare("SELECT COUNT(*) AS n, SUM(tokens) AS tokens FROM facts WHERE expires_at <= ? AND tenant_id = ? AND scope = ?").bind(now, owner, key),
      this.pageStatement(owner, key, start, FIRST_PAGE, now),
    ]);
    const live = liveStats(all?.results[0] as Stats | undefined, expired?.results[0] as Stats | undefined);
    const firstRows = (first?.results ?? []) as Fact[];
    // The first page holds the scope's every live fact (the stats and the page are one snapshot): kept for the next turns.
    if (firstRows.length === live.n) this.cache?.put(owner, key, firstRows, now);
    if (live.n === 0) return out;
    const ranked = () => rankedLayer(this.source(owner, key, now, live.n <= PREFIX_MAX_FACTS), limits.facts ?? 0, limits.rank ?? {}, live);
    if (live.tokens > limits.facts) return ranked();
    const room = new FactRoom(limits.facts);
    let after = start;
    let rows = firstRows;
    let page = FIRST_PAGE;
    // Keyset pages in creation order: more only for a scope of more than FIRST_PAGE facts.
    for (;;) {
      for (const f of rows) {
        // The lines fit but not with their kinds' headers: the scope does not fit, so it is ranked.
        if (!room.take(f)) return ranked();
        out.facts.push(f);
        after = f;
      }
      if (rows.length < page) return out;
      page = MAX_PAGE;
      rows = (await this.pageStatement(owner, key, after, page, now).all<Fact>()).results;
    }
  }

  /** Statements asked for in the same tick, waiting to go to D1 together (see batched). */
  private pending: { stmts: D1PreparedStatement[]; settle: (r: Promise<D1Result<Record<string, unknown>>[]>) => void }[] | null = null;

  /**
   * Sends `stmts` to D1 in one batch with every other layer's asked for in the same tick:
   * a context load starts all its layers at once (MemoryManager.loadContext), so its scopes
   * cost one round trip together instead of one each.
   */
  private batched(stmts: D1PreparedStatement[]): Promise<D1Result<Record<string, unknown>>[]> {
    return new Promise((settle) => {
      if (this.pending === null) {
        this.pending = [];
        queueMicrotask(() => this.flush());
      }
      this.pending.push({ stmts, settle });
    });
  }

  private flush(): void {
    const group = this.pending ?? [];
    this.pending = null;
    const all = this.db.batch<Record<string, unknown>>(group.flatMap((g) => g.stmts));
    let at = 0;
    for (const g of group) {
      const from = at;
      at += g.stmts.length;
      g.settle(all.then((results) => results.slice(from, from + g.stmts.length)));
    }
  }

  /** The queries rank.ts needs, bound to one scope and one moment; `halfWords`: the search matches a long word's first half too. */
  private source(owner: string, scope: string, now: number, halfWords: boolean): FactSource {
    const ofKinds = (kinds: readonly string[], limit: number, after: { created_at: number; id: string }) =>
      this.db
        .prepare(
          `SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND scope = ? AND kind IN (${kinds.map(() => "?").join(", ")}) AND ${LIVE} ` +
            "AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
        )
        .bind(owner, scope, ...kinds, now, after.created_at, after.id, limit);
    // The newest DENSE_SCAN live facts with their vectors: the dense channel compares the query with each.
    const vectors = () =>
      this.db
        .prepare(`SELECT ${COLUMNS}, vec, vec_by FROM facts WHERE tenant_id = ? AND scope = ? AND ${LIVE} ORDER BY updated_at DESC, id DESC LIMIT ?`)
        .bind(owner, scope, now, DENSE_SCAN);
    const recent = (limit: number, before: { updated_at: number; id: string }) =>
      this.db
        .prepare(
          `SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND scope = ? AND ${LIVE} AND (updated_at < ? OR (updated_at = ? AND id < ?)) ` +
            "ORDER BY updated_at DESC, id DESC LIMIT ?",
        )
        .bind(owner, scope, now, before.updated_at, before.updated_at, before.id || "\uffff", limit);
    return {
      firstRows: async (req) => {
        const terms = req.channels.includes("full_text") ? searchTerms(req.query) : [];
        // The dense channel: the query's vector when the embedder is ready (a remote one's: fetched) and the query has a meaning.
        const wanted = req.channels.includes("dense") && req.query.trim() !== "";
        const remote = factsEmbedder().remote;
        const table = wanted && !remote ? await loadWordTable() : undefined;
        const query = remote
          ? wanted
            ? await remoteQueryVector(this.db, remote, this.tenant, req.query, this.holder)
            : undefined
          : table && embedWords(table, req.query);
        const dense = query?.some((x) => x !== 0) === true;
        const stmts: D1PreparedStatement[] = [recent(req.recentLimit, { updated_at: Number.MAX_SAFE_INTEGER, id: "" })];
        if (req.kinds.length > 0) stmts.push(ofKinds(req.kinds, req.limit, { created_at: -1, id: "" }));
        // A budget to fill: a long word's first half counts too (bm25-search.ts, matchLists).
        if (terms.length > 0) stmts.push(bm25Statement(this.db, F_COLUMNS, await inScopes([{ owner, scope }]), terms, req.relevantLimit, now, {}, halfWords));
        if (dense) stmts.push(vectors());
        const [r, ...rest] = await this.batched(stmts);
        const always = req.kinds.length > 0 ? rest.shift() : undefined;
        const relevant = terms.length > 0 ? rest.shift() : undefined;
        const withVectors = dense ? ((rest.shift()?.results ?? []) as VectorRow[]) : [];
        return {
          recent: (r?.results ?? []) as Fact[],
          always: (always?.results ?? []) as Fact[],
          relevant: ((relevant?.results ?? []) as (Fact & { score: number })[]).map(scored),
          ...(query ? nearestFacts(table, remote, withVectors, query, req.relevantLimit) : { near: [] }),
        };
      },
      ofKinds: async (kinds, limit, after) => (await ofKinds(kinds, limit, after).all<Fact>()).results,
      recent: async (limit, before) => (await recent(limit, before).all<Fact>()).results,
    };
  }

  /**
   * BM25 search over the given scopes' live facts, best first (score: relative to the best
   * match, relativeScores): words alone. The query is tokenized here, never passed to FTS5 as syntax.
   */
  async search(
    scopes: readonly { owner: string; scope: string }[],
    query: string,
    limit: number,
    now = this.clock(),
    filter: ListFilter = {},
  ): Promise<ScoredFact[]> {
    const terms = searchTerms(query);
    if (terms.length === 0 || scopes.length === 0) return [];
    const { results } = await this.searchStatement(await inScopes(scopes), terms, limit, now, filter).all<Fact & { score: number }>();
    return relativeScores(results);
  }

  /**
   * The one scorer (bm25-search.ts): FTS5 matches, BM25 counts only the facts within `reach` (this
   * tenant's searched scopes); the kind/key filter applies in SQL, before the LIMIT, so a filtered
   * search is not a cut of an unfiltered page.
   */
  private searchStatement(reach: Reach, terms: readonly string[], limit: number, now: number, filter: ListFilter = {}): D1PreparedStatement {
    return bm25Statement(this.db, F_COLUMNS, reach, terms, limit, now, filter);
  }

  /**
   * `GET /v1/memory/facts?q=`: the scopes' facts (system included, read from the operator's rows) ranked for `query`
   * as the memory tools' recall ranks them, by words and meaning fused; optionally one kind and/or key.
   */
  searchScopes(scopes: readonly MemoryScope[], query: string, limit: number, filter: ListFilter = {}): Promise<RecalledFact[]> {
    return this.recall({ scopes }, query, limit, filter);
  }

  /**
   * Search every scope of this tenant that `grants` match (key grant patterns: `*`, `name:prefix*`,
   * exact scopes) and, with `withSystem`, the operator's `system` facts: for callers outside a run,
   * who have no layer list (MCP). The patterns go into the WHERE clause, before the LIMIT; a prefix
   * compares by substr with its length inlined, so each pattern costs one bound value (64 grants at most).
   */
  async searchGranted(grants: readonly string[], withSystem: boolean, query: string, limit: number): Promise<ScoredFact[]> {
    const terms = searchTerms(query);
    if (terms.length === 0 || (grants.length === 0 && !withSystem)) return [];
    const { results } = await this.searchStatement(await this.#granted(grants, withSystem), terms, limit, this.clock()).all<Fact & { score: number }>();
    return relativeScores(results);
  }

  /** Every scope of this tenant that `grants` match, and with `withSystem` the operator's `system` facts (searchGranted). */
  async #granted(grants: readonly string[], withSystem: boolean): Promise<Reach> {
    const owners = [...(grants.length > 0 ? [this.tenant] : []), ...(withSystem ? [OPERATOR_TENANT] : [])];
    return {
      marks: await Promise.all(owners.map(tenantMark)),
      where: (p) => {
        const one = (g: string) => (g === "*" ? "1" : g.endsWith("*") ? `substr(scope, 1, ${g.length - 1}) = ${p.ref(g.slice(0, -1))}` : `scope = ${p.ref(g)}`);
        const owned = grants.length > 0 ? [`tenant_id = ${p.ref(this.tenant)} AND (${balanced(grants.map(one), "OR")})`] : [];
        return balanced([...owned, ...(withSystem ? [`tenant_id = ${p.ref(OPERATOR_TENANT)} AND scope = 'system'`] : [])], "OR");
      },
    };
  }

  /**
   * The memory tools' recall (the agent's and MCP's): facts ranked for `query` by words and by meaning,
   * fused as a run ranks them (rank.ts), best first, at most `limit`: `score` 1 for the best, lower for
   * weaker ones, and each fact's `channels` (its rank and score in each channel that found it). Reach is
   * exact scopes, or grant patterns (`granted`) for callers with no layer list; both are bound to the
   * tenant in SQL, the vectors read with the facts they belong to.
   */
  async recall(
    reach: { scopes: readonly MemoryScope[] } | { grants: readonly string[]; withSystem: boolean },
    query: string,
    limit: number,
    filter: ListFilter = {},
  ): Promise<RecalledFact[]> {
    const within =
      "scopes" in reach
        ? await inScopes(reach.scopes.map((s) => ({ owner: ownerTenant(s, this.tenant), scope: s.toString() })))
        : await this.#granted(reach.grants, reach.withSystem);
    if ("scopes" in reach ? reach.scopes.length === 0 : reach.grants.length === 0 && !reach.withSystem) return [];
    const now = this.clock();
    const terms = searchTerms(query);
    // The dense channel as a run's: the file's embedder (a remote one's query vector fetched; failing, words alone).
    const remote = factsEmbedder().remote;
    const table = query.trim() !== "" && !remote ? await loadWordTable() : undefined;
    const q = remote
      ? query.trim() !== ""
        ? await remoteQueryVector(this.db, remote, this.tenant, query, this.holder)
        : undefined
      : table && embedWords(table, query);
    const dense = q?.some((x) => x !== 0) === true;
    const stmts: D1PreparedStatement[] = [];
    // Each channel's pool holds the answer's `limit` at least (a search answers up to 200).
    const pool = Math.max(RECALL_POOL, limit);
    if (terms.length > 0) stmts.push(this.searchStatement(within, terms, pool, now, filter));
    if (dense) {
      const p = new Params();
      const only = [filter.kind !== undefined ? `AND kind = ${p.ref(filter.kind)}` : "", filter.key !== undefined ? `AND key = ${p.ref(filter.key)}` : ""].join(
        " ",
      );
      const sql = `SELECT ${COLUMNS}, vec, vec_by FROM facts WHERE (${within.where(p)}) ${only} AND (expires_at IS NULL OR expires_at > ${p.ref(now)}) ORDER BY updated_at DESC, id DESC LIMIT ${p.ref(DENSE_SCAN)}`;
      stmts.push(this.db.prepare(sql).bind(...p.values));
    }
    if (stmts.length === 0) return [];
    const results = await this.batched(stmts);
    const words = terms.length > 0 ? ((results.shift()?.results ?? []) as (Fact & { score: number })[]).map(scored) : [];
    const { near, floor } = q && dense ? nearestFacts(table, remote, (results.shift()?.results ?? []) as VectorRow[], q, pool) : { near: [] };
    const byId = new Map([...words, ...near].map((f) => [f.id, f]));
    const fused = fuseScores(
      words.map((f) => ({ key: f.id, score: f.score })),
      near.map((f) => ({ key: f.id, score: f.score })),
      DENSE_WEIGHT,
      floor,
    ).slice(0, limit);
    const best = fused[0]?.score ?? 0;
    return fused.map(({ key, score, channels }) => {
      const { score: _own, ...fact } = byId.get(key)!;
      return { ...fact, score: best > 0 ? Math.round((score / best) * 1e4) / 1e4 : 0, channels };
    });
  }

  async appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string> {
    if (item.type !== "fact") throw new AppError("BEM-001", undefined, { internal: "D1FactsBackend stores facts only" });
    return (await this.remember(scope, item.kind, item.text)).id;
  }

  /**
   * Stores a fact (kind, text, key and expiry validated by the caller). With a key that
   * the scope already holds live, the text (kind, expiry) is replaced in place — same id, version + 1 —
   * and the old text kept in fact_versions by the update trigger (its 20 newest, migration 0024: a replacement needs
   * no room under the facts quota, so the versions must not grow without end). Without a key, the same text
   * (fact-text-hash.ts) in the scope is the fact already there, returned as it is (`existing`), its expiry
   * the later of the two; an expired copy the purge has not reached yet is dropped first, so it never returns.
   * One transaction, so two concurrent writers leave one fact, never two.
   */
  async remember(scope: MemoryScope, kind: string, text: string, opts: RememberOptions = {}): Promise<Remembered> {
    // Defence in depth behind the route checks: system facts only from the operator, and the operator only those.
    if (scope.isSystem !== (this.tenant === OPERATOR_TENANT)) {
      throw new AppError("BEM-023", scope.isSystem ? "Only the operator key writes system facts" : "The operator key writes only the system scope");
    }
    const now = opts.now ?? this.clock();
    const id = ids.next();
    const key = opts.key ?? null;
    const hash = await factTextHash(text);
    const writtenBy = opts.writtenBy ?? "model";
    const tokens = factTokens(text, { kind, scope: scope.toString(), written_by: writtenBy });
    // Its vector with it, when the embedded table is ready (else NULL: the ranking embeds it when it reads it).
    // A remote embedder's comes later (fact-vectors.ts): no network inside a write.
    const table = factsEmbedder().remote ? undefined : await loadWordTable();
    const vec = table ? quantize(embedWords(table, text)) : null;
    // The quota is checked inside the INSERT (D1 runs one write at a time), so concurrent writers cannot all pass
    // one count: a new fact needs room, a replacement of a live key or the same text again does not.
    const write = this.db
      .prepare(
        "INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, key, expires_at, updated_at, version, text_hash, written_by, vec, vec_by, fts_text) " +
          "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?12, ?13, ?14, ?15, ?16 " +
          "WHERE ?11 IS NULL OR COALESCE((SELECT n FROM tenant_counts WHERE tenant_id = ?2 AND kind = 'facts'), 0) < ?11 " +
          "OR EXISTS (SELECT 1 FROM facts WHERE tenant_id = ?2 AND scope = ?3 AND key = ?8) " +
          "OR (?8 IS NULL AND EXISTS (SELECT 1 FROM facts WHERE tenant_id = ?2 AND scope = ?3 AND key IS NULL AND text_hash = ?12 AND (expires_at IS NULL OR expires_at > ?7))) " +
          "ON CONFLICT (tenant_id, scope, key) WHERE key IS NOT NULL DO UPDATE SET kind = excluded.kind, text = excluded.text, tokens = excluded.tokens, " +
          "expires_at = excluded.expires_at, updated_at = excluded.updated_at, version = facts.version + 1, text_hash = excluded.text_hash, written_by = excluded.written_by, vec = excluded.vec, vec_by = excluded.vec_by, fts_text = excluded.fts_text " +
          "ON CONFLICT (tenant_id, scope, text_hash) WHERE key IS NULL DO UPDATE SET " +
          "expires_at = CASE WHEN facts.expires_at IS NULL OR excluded.expires_at IS NULL THEN NULL ELSE MAX(facts.expires_at, excluded.expires_at) END " +
          `RETURNING ${COLUMNS}`,
      )
      .bind(
        id,
        this.tenant,
        scope.toString(),
        kind,
        text,
        tokens,
        now,
        key,
        opts.expiresAt ?? null,
        now,
        opts.maxFacts ?? null,
        hash,
        writtenBy,
        vec?.buffer ?? null,
        vec ? EMBEDDED_ID : null,
        markedText(await tenantMark(this.tenant), text),
      );
    // An expired fact under the key, or of the same text, is gone, not renewed: the new one starts at version 1 with no history
    // (the delete trigger takes its versions).
    const expired =
      key === null
        ? this.db
            .prepare("DELETE FROM facts WHERE tenant_id = ? AND scope = ? AND text_hash = ? AND key IS NULL AND expires_at <= ?")
            .bind(this.tenant, scope.toString(), hash, now)
        : this.db.prepare("DELETE FROM facts WHERE tenant_id = ? AND scope = ? AND key = ? AND expires_at <= ?").bind(this.tenant, scope.toString(), key, now);
    const row = (await this.db.batch<Fact>([expired, write]))[1]?.results[0];
    if (!row && opts.maxFacts !== undefined) {
      throw new AppError(
        "BEM-018",
        `This tenant holds ${opts.maxFacts} facts; the limit is ${opts.maxFacts} (MAX_FACTS_PER_TENANT). Remove some to make room.`,
      );
    }
    if (!row) throw new AppError("BEM-001", undefined, { internal: "INSERT … RETURNING gave no row" });
    return { ...row, replaced: row.version > 1, existing: key === null && row.id !== id };
  }

  async forget(id: string): Promise<boolean> {
    const res = await this.db.prepare("DELETE FROM facts WHERE tenant_id = ? AND id = ?").bind(this.tenant, id).run();
    return res.meta.changes > 0;
  }

  /** A fact this tenant owns (system facts belong to the operator), or null. Expired facts are gone. */
  async get(id: string): Promise<Fact | null> {
    return this.db.prepare(`SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND id = ? AND ${LIVE}`).bind(this.tenant, id, this.clock()).first<Fact>();
  }

  /** The live fact with this key in this scope, or null. */
  async getByKey(scope: MemoryScope, key: string): Promise<Fact | null> {
    return this.db
      .prepare(`SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND scope = ? AND key = ? AND ${LIVE}`)
      .bind(ownerTenant(scope, this.tenant), scope.toString(), key, this.clock())
      .first<Fact>();
  }

  /** Earlier texts of a fact this tenant owns, newest first. */
  async history(id: string, limit = 100): Promise<FactVersion[]> {
    const { results } = await this.db
      .prepare("SELECT version, kind, text, written_at, replaced_at FROM fact_versions WHERE fact_id = ? AND tenant_id = ? ORDER BY version DESC LIMIT ?")
      .bind(id, this.tenant, limit)
      .all<FactVersion>();
    return results;
  }

  /** One page of a scope's live facts in creation order, after `after`, optionally one kind and/or one key. */
  async list(scope: MemoryScope, limit: number, after?: FactCursor, filter: ListFilter = {}): Promise<Fact[]> {
    const a = after ?? { created_at: -1, id: "" };
    const where = [filter.kind !== undefined ? "AND kind = ?" : "", filter.key !== undefined ? "AND key = ?" : ""].join(" ");
    const extra = [filter.kind, filter.key].filter((v): v is string => v !== undefined);
    const { results } = await this.db
      .prepare(
        `SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND scope = ? ${where} AND ${LIVE} AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
      )
      .bind(ownerTenant(scope, this.tenant), scope.toString(), ...extra, this.clock(), a.created_at, a.id, limit)
      .all<Fact>();
    return results;
  }

  private pageStatement(owner: string, scope: string, after: FactCursor, limit: number, now: number): D1PreparedStatement {
    return this.db
      .prepare(`SELECT ${COLUMNS} FROM facts WHERE tenant_id = ? AND scope = ? AND ${LIVE} AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`)
      .bind(owner, scope, now, after.created_at, after.id, limit);
  }
}

/** Deletes facts whose expiry has passed, in bounded batches (the scheduled purge). Returns how many. */
export async function purgeExpiredFacts(db: D1Database, now = Date.now(), batch = 500, maxBatches = 100): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const res = await db.prepare("DELETE FROM facts WHERE rowid IN (SELECT rowid FROM facts WHERE expires_at <= ? LIMIT ?)").bind(now, batch).run();
    total += res.meta.changes;
    if (res.meta.changes < batch) break;
  }
  return total;
}
