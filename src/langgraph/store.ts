import { z } from "@hono/zod-openapi";
import { balanced } from "../core/sql-tree";
import type { Principal } from "../core/principal";
import { AppError } from "../core/errors";
import { MemoryScope } from "../memory/scope";
import { langgraphTenant, mayReachScope } from "./access";
import { loadWordTable } from "../embed/embedded";
import type { WordTable } from "../embed/word-table";
import { type Candidate, type IndexSpec, type ItemIndex, indexItem, rankCandidates } from "./store-index";

/**
 * LangGraph store items in D1 (`store_items`), per tenant. A namespace is a
 * list of labels; its first two labels are a memory scope (`["organization",
 * "acme", …]` is `organization:acme`, `["system"]` is `system`), and the key's
 * grants decide what it reaches, as they do for facts. Stored as the labels
 * joined by "." (labels never contain "." or ":"), so a prefix is a range scan.
 */
const LABEL = /^[^.:\0]{1,256}$/;
export const Namespace = z.array(z.string()).min(1).max(16);
const MAX_KEY = 512;

export type StoreItem = { namespace: string[]; key: string; value: Record<string, unknown>; created_at: string; updated_at: string };
/** A search's item; ranked by a `query`, with its `score` (null: nothing of it indexed), as LangGraph's SearchItem. */
export type SearchItem = StoreItem & { score?: number | null };
type Row = { namespace: string; key: string; value: string; created_at: number; updated_at: number };

function checkLabels(ns: readonly string[], allowEmpty: boolean): void {
  if (ns.length === 0 && !allowEmpty) throw new AppError("BEM-120", "A namespace needs at least one label");
  for (const l of ns) {
    if (!LABEL.test(l)) throw new AppError("BEM-120", `Namespace label '${l.slice(0, 40)}' must be 1-256 characters without '.', ':' or NUL`);
  }
}

/** The scope a namespace belongs to (BEM-060 when its first labels are not a scope). */
export function scopeOfNamespace(ns: readonly string[]): MemoryScope {
  checkLabels(ns, false);
  return MemoryScope.new(ns[0]!, ns[1]);
}

/** The scope ↔ namespace mapping the other way: `organization:acme` → ["organization", "acme"]. */
export const namespaceOfScope = (scope: MemoryScope): string[] => (scope.id === undefined ? [scope.name] : [scope.name, scope.id]);

function requireNamespace(p: Principal, ns: readonly string[]): void {
  const scope = scopeOfNamespace(ns);
  if (!mayReachScope(p, scope)) throw new AppError("BEM-023", `Namespace ${JSON.stringify(ns)} (scope ${scope}) is outside the key's grants`);
}

const joined = (ns: readonly string[]) => ns.join(".");
const after = (prefix: string) => [`${prefix}.`, `${prefix}/`] as const; // '/' follows '.': [p., p/) is every p.*

/** Numbered SQL parameters (`?1`, `?2`, …): a statement built from parts binds each value once. */
class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `?${this.values.length}`;
  }
}

/**
 * SQL matching the namespaces the principal's grants reach (policy `reach_namespace`, in SQL); null: all of the tenant.
 * It must match exactly what `grantMatches` allows for a namespace's scope (its first two labels), never more:
 * - "name:prefix*" reaches namespaces whose second label starts with prefix — none when prefix holds '.' or ':',
 *   which labels never do (as text, "organization:acme.*" would start "organization.acme.notes", of organization:acme);
 * - "name:id" reaches [name, id, …] — none when id holds '.' or ':' ("organization:a.b" is not ["organization","a","b"]);
 * - a bare "name" reaches the one-label namespace [name] only: [name, x, …] is scope name:x, which it does not grant.
 * Each kind is one JSON parameter walked with json_each, so a key's 64 grants stay under D1's 100 bound parameters.
 */
function grantClause(p: Principal, bind: Params): string | null {
  if (p.grants.includes("*")) return null;
  const exact: string[] = [];
  const subtrees: string[] = [];
  const ranges: [string, string][] = [];
  const asLabel = (id: string) => !/[.:]/.test(id);
  for (const g of p.grants) {
    if (g.endsWith("*")) {
      // "name:*" and "name:prefix*": namespaces whose text starts with "name." + prefix.
      const at = g.indexOf(":");
      const prefix = g.slice(at + 1, -1);
      if (!asLabel(prefix)) continue;
      const start = `${g.slice(0, at)}.${prefix}`;
      ranges.push([start, `${start}\u{10ffff}`]);
    } else {
      const scope = MemoryScope.parse(g);
      const ns = joined(namespaceOfScope(scope));
      if (scope.id === undefined) exact.push(ns);
      else if (asLabel(scope.id)) subtrees.push(ns);
    }
  }
  const parts: string[] = [];
  if (exact.length) parts.push(`namespace IN (SELECT value FROM json_each(${bind.add(JSON.stringify(exact))}))`);
  if (subtrees.length) {
    // '/' follows '.': [ns., ns/) is every ns.*
    parts.push(
      `EXISTS (SELECT 1 FROM json_each(${bind.add(JSON.stringify(subtrees))}) g WHERE namespace = g.value OR (namespace >= g.value || '.' AND namespace < g.value || '/'))`,
    );
  }
  if (ranges.length) {
    parts.push(
      `EXISTS (SELECT 1 FROM json_each(${bind.add(JSON.stringify(ranges))}) r WHERE namespace >= json_extract(r.value, '$[0]') AND namespace < json_extract(r.value, '$[1]'))`,
    );
  }
  return parts.length ? `(${parts.join(" OR ")})` : "0";
}

function prefixClause(prefix: readonly string[], bind: Params): string | null {
  if (prefix.length === 0) return null;
  const ns = joined(prefix);
  const [lo, hi] = after(ns);
  return `(namespace = ${bind.add(ns)} OR (namespace >= ${bind.add(lo)} AND namespace < ${bind.add(hi)}))`;
}

/** Items not past their TTL. */
const alive = (bind: Params, now: number) => `(expires_at IS NULL OR expires_at > ${bind.add(now)})`;

const toItem = (r: Row): StoreItem => ({
  namespace: r.namespace.split("."),
  key: r.key,
  value: JSON.parse(r.value) as Record<string, unknown>,
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

function checkKey(key: string): void {
  if (key.length === 0 || key.length > MAX_KEY) throw new AppError("BEM-120", `A key is 1-${MAX_KEY} characters`);
}

/**
 * The scheduled task's part for the store (cron in wrangler.toml): removes every tenant's expired
 * items (their counts follow, by trigger). Reads already skip them, so a late purge only costs storage.
 */
export async function purgeExpiredItems(db: D1Database, now = Date.now()): Promise<number> {
  const res = await db.prepare(`DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?`).bind(now).run();
  return res.meta.changes;
}

/** How long an item lives: `ttl` minutes from its put, renewed by reads that refresh it (LangGraph's TTL). */
export type Ttl = { ttl?: number | null };
const MINUTE = 60_000;

/** One operation of a batch, as the routes parse it (a put of a null value deletes). */
export type StoreOp =
  | { op: "get"; namespace: string[]; key: string; refreshTtl?: boolean }
  | { op: "put"; namespace: string[]; key: string; value: Record<string, unknown> | null; ttl?: number | null; index?: IndexSpec }
  | { op: "search"; prefix: string[]; filter?: Record<string, unknown>; limit?: number; offset?: number; refreshTtl?: boolean; query?: string | null }
  | { op: "list_namespaces"; prefix?: string[]; suffix?: string[]; maxDepth?: number; limit?: number; offset?: number };
export type StoreResult = StoreItem | StoreItem[] | string[][] | null;

/**
 * An op made into its statements (checked already), and how to read its result from theirs; a ranked
 * search reads its page's values once the batch has ranked its candidates (`finish`).
 */
type Planned = {
  statements: D1PreparedStatement[];
  read: (results: D1Result[]) => StoreResult;
  refresh: (results: D1Result[]) => Row[];
  finish?: (results: D1Result[]) => Promise<{ result: StoreResult; refresh: Row[] }>;
};

/** A search ranks by its query when it has one with more than blanks (LangGraph's InMemoryStore ranks by any non-empty one). */
const rankedBy = (op: StoreOp): string | undefined => (op.op === "search" && op.query && op.query.trim() !== "" ? op.query : undefined);
/**
 * The candidates a ranked search reads at most, newest update first (after prefix, filter and grants):
 * a bound on what one search reads and scores in the Worker, as a ranked fact scope reads its newest 5,000.
 */
export const RANK_SCAN = 2000;

/** A put's value column is NOT NULL: a put past a limit writes NULL there, which fails the whole batch (see #put). */
const isQuotaFailure = (e: unknown) => e instanceof Error && /NOT NULL constraint failed: store_items\.value/.test(e.message);

/**
 * Bytes of values one request's reads (its gets and searches, and the namespaces its lists return) may return, each read op an equal share. A
 * batch is charged one request per 10 ops, and each op may search 1,000 items of up to ~1 MiB, so one
 * request could make the Worker read and answer gigabytes (the same items once per op), far past its memory.
 */
export const MAX_STORE_READ_BYTES = 16 * 1024 * 1024;
/**
 * A read past its share selects json() of this text, which is no JSON: SQLite fails the statement, so D1
 * rolls the whole batch back (its puts included) before a value past the share is read out.
 */
const READ_CAP = "edgeweave: store read past its byte share";
const isReadCapFailure = (e: unknown) => e instanceof Error && /malformed JSON/.test(e.message);
const readCapError = (share: number) =>
  new AppError(
    "BEM-133",
    `This request's reads would return more than ${MAX_STORE_READ_BYTES} bytes of values and namespaces (MAX_STORE_READ_BYTES; each of its gets, searches and namespace lists ${share}): send fewer reads per request, or read with a smaller limit and page with offset. Nothing of this request was stored.`,
  );

/** The tenant's store quotas (src/auth/quotas.ts). */
export type StoreLimits = { items: number; bytes: number };
/** Bytes of a text as SQLite's length(CAST(… AS BLOB)) counts them: the 'store_bytes' triggers sum an item's namespace, key, value and index (its texts and vectors). */
const utf8Bytes = (text: string) => new TextEncoder().encode(text).byteLength;

export class ScopedStore {
  private readonly tenant: string;

  constructor(
    private readonly db: D1Database,
    private readonly principal: Principal,
    /**
     * The tenant's quotas: `items` (MAX_STORE_ITEMS_PER_TENANT: a put of a new key past it is 413 BEM-121)
     * and `bytes` of the items, namespace, key and index included (MAX_STORE_BYTES_PER_TENANT: a put that grows them past it is 413 BEM-190).
     * An update that does not grow its item, and a delete, always go in.
     */
    private readonly limits: StoreLimits = { items: Number.MAX_SAFE_INTEGER, bytes: Number.MAX_SAFE_INTEGER },
  ) {
    this.tenant = langgraphTenant(principal);
  }

  /**
   * Runs the ops in order, all or nothing: every op is checked (grants, namespace, key, filter)
   * before any statement runs, and the statements go to D1 as one batch, which is a transaction,
   * so a refused op or a put past the tenant's limit leaves nothing of the batch stored. Reads see
   * the batch's earlier puts. Reads that refresh (the default) renew the TTL of what they return.
   */
  async batch(ops: readonly StoreOp[], now = Date.now()): Promise<StoreResult[]> {
    const reads = ops.filter((op) => op.op !== "put").length;
    const share = Math.floor(MAX_STORE_READ_BYTES / Math.max(1, reads));
    // Puts embed their indexed texts and ranked searches their query: with the embedded table when it loads, else full-text alone.
    const table = ops.some((op) => (op.op === "put" && op.value !== null) || rankedBy(op)) ? await loadWordTable() : undefined;
    const plans = ops.map((op) => this.#plan(op, now, share, table));
    const statements = plans.flatMap((p) => p.statements);
    let results: D1Result[];
    try {
      results = await this.db.batch(statements);
    } catch (e) {
      if (isReadCapFailure(e)) throw readCapError(share);
      if (!isQuotaFailure(e)) throw e;
      // Expired items still count until removed: remove the tenant's, then try once more.
      const purged = await this.db.prepare(`DELETE FROM store_items WHERE tenant_id = ? AND expires_at <= ?`).bind(this.tenant, now).run();
      results = await (purged.meta.changes > 0 ? this.db.batch(statements) : Promise.reject(e)).catch(async (again: unknown) => {
        if (isReadCapFailure(again)) throw readCapError(share);
        if (!isQuotaFailure(again)) throw again;
        throw await this.#overQuota();
      });
    }
    let at = 0;
    const owned = plans.map((p) => ({ p, own: results.slice(at, (at += p.statements.length)) }));
    const done = await Promise.all(owned.map(({ p, own }) => (p.finish ? p.finish(own) : { result: p.read(own), refresh: p.refresh(own) })));
    await this.refresh(
      done.flatMap((d) => d.refresh),
      now,
    );
    return done.map((d) => d.result);
  }

  /** Which quota a refused batch met: the item count when it is full, else the bytes. */
  async #overQuota(): Promise<AppError> {
    const held = await this.db.prepare(`SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = 'store_items'`).bind(this.tenant).first<{ n: number }>();
    const tail = "Delete some to make room; nothing of this request was stored.";
    if ((held?.n ?? 0) >= this.limits.items) {
      return new AppError("BEM-121", `This tenant holds ${this.limits.items} LangGraph store items, the limit (MAX_STORE_ITEMS_PER_TENANT). ${tail}`);
    }
    return new AppError(
      "BEM-190",
      `This request would take the tenant's LangGraph store items past ${this.limits.bytes} bytes (namespaces, keys and values), the limit (MAX_STORE_BYTES_PER_TENANT). ${tail}`,
    );
  }

  async put(ns: string[], key: string, value: Record<string, unknown>, opts: Ttl & { index?: IndexSpec } = {}, now = Date.now()): Promise<void> {
    await this.batch([{ op: "put", namespace: ns, key, value, ttl: opts.ttl, index: opts.index }], now);
  }

  /** The item, unless absent or past its TTL; `refreshTtl` (LangGraph's default) renews its TTL. */
  async get(ns: string[], key: string, opts: { refreshTtl?: boolean } = {}, now = Date.now()): Promise<StoreItem | null> {
    return (await this.batch([{ op: "get", namespace: ns, key, refreshTtl: opts.refreshTtl }], now))[0] as StoreItem | null;
  }

  async delete(ns: string[], key: string): Promise<void> {
    await this.batch([{ op: "put", namespace: ns, key, value: null }]);
  }

  /**
   * Items under the prefix the key reaches, filtered by value fields, newest update first (then
   * namespace and key), or with a `query` best first by it (store-index.ts), each with its `score`;
   * past their TTL they are gone, and `refreshTtl` (the default) renews what is returned.
   */
  async search(
    prefix: string[],
    opts: { filter?: Record<string, unknown>; limit?: number; offset?: number; refreshTtl?: boolean; query?: string | null },
    now = Date.now(),
  ): Promise<SearchItem[]> {
    return (await this.batch([{ op: "search", prefix, ...opts }], now))[0] as SearchItem[];
  }

  /** Distinct namespaces the key reaches, matched by prefix / suffix ("*" matches any label), cut to maxDepth. */
  async listNamespaces(
    opts: { prefix?: string[]; suffix?: string[]; maxDepth?: number; limit?: number; offset?: number },
    now = Date.now(),
  ): Promise<string[][]> {
    return (await this.batch([{ op: "list_namespaces", ...opts }], now))[0] as string[][];
  }

  /** `share`: the bytes of values this op may read (MAX_STORE_READ_BYTES over the request's reads); past it the statement fails. */
  #plan(op: StoreOp, now: number, share: number, table: WordTable | undefined): Planned {
    const none = () => [];
    const rowsOf = (r: D1Result[]) => (r[0]?.results ?? []) as Row[];
    if (op.op === "put") {
      requireNamespace(this.principal, op.namespace);
      checkKey(op.key);
      if (op.value === null) {
        const del = this.db
          .prepare(`DELETE FROM store_items WHERE tenant_id = ? AND namespace = ? AND key = ?`)
          .bind(this.tenant, joined(op.namespace), op.key);
        return { statements: [del], read: () => null, refresh: none };
      }
      const index = indexItem(op.value, op.index, table);
      return { statements: [this.#put(op.namespace, op.key, op.value, op.ttl ?? null, now, index)], read: () => null, refresh: none };
    }
    if (op.op === "get") {
      requireNamespace(this.principal, op.namespace);
      const bind = new Params();
      const value = `CASE WHEN length(CAST(value AS BLOB)) <= ${bind.add(share)} THEN value ELSE json(${bind.add(READ_CAP)}) END AS value`;
      const sql = `SELECT namespace, key, ${value}, created_at, updated_at FROM store_items WHERE tenant_id = ${bind.add(this.tenant)} AND namespace = ${bind.add(joined(op.namespace))} AND key = ${bind.add(op.key)} AND ${alive(bind, now)}`;
      const refresh = op.refreshTtl !== false;
      return {
        statements: [this.db.prepare(sql).bind(...bind.values)],
        read: (r) => rowsOf(r).map(toItem)[0] ?? null,
        refresh: (r) => (refresh ? rowsOf(r) : []),
      };
    }
    if (op.op === "search") {
      checkLabels(op.prefix, true);
      const bind = new Params();
      const where = [`tenant_id = ${bind.add(this.tenant)}`, alive(bind, now)];
      for (const c of [prefixClause(op.prefix, bind), grantClause(this.principal, bind), filterClause(op.filter ?? {}, bind)]) if (c) where.push(c);
      const query = rankedBy(op);
      if (query !== undefined) return this.#ranked(op, query, where, bind, share, table, now);
      // The page first (limit, offset), then its running total of value bytes in the same order: a row past the share fails the statement.
      const order = "ORDER BY updated_at DESC, namespace, key";
      const page = `SELECT namespace, key, value, created_at, updated_at FROM store_items WHERE ${where.join(" AND ")}
         ${order} LIMIT ${bind.add(op.limit ?? 10)} OFFSET ${bind.add(op.offset ?? 0)}`;
      const running = `SELECT *, SUM(length(CAST(value AS BLOB))) OVER (${order} ROWS UNBOUNDED PRECEDING) AS running FROM (${page})`;
      const sql = `SELECT namespace, key, CASE WHEN running <= ${bind.add(share)} THEN value ELSE json(${bind.add(READ_CAP)}) END AS value, created_at, updated_at
         FROM (${running}) ${order}`;
      const refresh = op.refreshTtl !== false;
      return { statements: [this.db.prepare(sql).bind(...bind.values)], read: (r) => rowsOf(r).map(toItem), refresh: (r) => (refresh ? rowsOf(r) : []) };
    }
    const bind = new Params();
    // A namespace is up to 16 labels of 256 characters, a page 1,000 of them: counted against the share as values are.
    const sql = `SELECT CASE WHEN running <= ${bind.add(share)} THEN namespace ELSE json(${bind.add(READ_CAP)}) END AS namespace FROM (
        SELECT namespace, SUM(length(CAST(namespace AS BLOB))) OVER (ORDER BY namespace ROWS UNBOUNDED PRECEDING) AS running
        FROM (${namespacesQuery(this.tenant, this.principal, op, now, bind)})) ORDER BY namespace`;
    return { statements: [this.db.prepare(sql).bind(...bind.values)], read: (r) => rowsOf(r).map((row) => row.namespace.split(".")), refresh: none };
  }

  /**
   * A search by `query` (store-index.ts): its statement reads the newest RANK_SCAN candidates, without
   * their values, inside the batch (so it sees the batch's earlier puts); once they are ranked, one more
   * statement reads the page's values. The page is chosen after the batch, so the byte share is held by
   * the most the page could read: the statement fails, and the batch with it, when the `limit` largest
   * candidates' values pass the share.
   */
  #ranked(
    op: Extract<StoreOp, { op: "search" }>,
    query: string,
    where: readonly string[],
    bind: Params,
    share: number,
    table: WordTable | undefined,
    now: number,
  ): Planned {
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    const sql = `WITH c AS (SELECT namespace, key, index_text, vec, vec_by, length(CAST(value AS BLOB)) AS bytes FROM store_items
        WHERE ${where.join(" AND ")} ORDER BY updated_at DESC, namespace, key LIMIT ${bind.add(RANK_SCAN)})
      SELECT namespace, key, index_text, vec, vec_by, CASE WHEN
          (SELECT COALESCE(SUM(bytes), 0) FROM (SELECT bytes FROM c ORDER BY bytes DESC LIMIT ${bind.add(limit)})) <= ${bind.add(share)}
        THEN 1 ELSE json(${bind.add(READ_CAP)}) END AS fits FROM c`;
    const finish = async (results: D1Result[]) => {
      const ranked = rankCandidates((results[0]?.results ?? []) as Candidate[], query, table).slice(offset, offset + limit);
      if (ranked.length === 0) return { result: [], refresh: [] };
      const read = new Params();
      const page = JSON.stringify(ranked.map((r) => [r.namespace, r.key]));
      const values = `SELECT s.namespace, s.key, s.value, s.created_at, s.updated_at, p.key AS at FROM json_each(${read.add(page)}) p
          JOIN store_items s ON s.tenant_id = ${read.add(this.tenant)} AND s.namespace = p.value ->> 0 AND s.key = p.value ->> 1
          WHERE ${alive(read, now)}`;
      const running = `SELECT *, SUM(length(CAST(value AS BLOB))) OVER (ORDER BY at ROWS UNBOUNDED PRECEDING) AS running FROM (${values})`;
      const capped = `SELECT namespace, key, CASE WHEN running <= ${read.add(share)} THEN value ELSE json(${read.add(READ_CAP)}) END AS value, created_at, updated_at, at
          FROM (${running}) ORDER BY at`;
      const rows = await this.db
        .prepare(capped)
        .bind(...read.values)
        .all<Row & { at: number }>()
        .catch((e: unknown) => {
          throw isReadCapFailure(e) ? readCapError(share) : e;
        });
      const items = rows.results.map((r): SearchItem => ({ ...toItem(r), score: ranked[r.at]!.score }));
      return { result: items, refresh: op.refreshTtl !== false ? rows.results : [] };
    };
    return { statements: [this.db.prepare(sql).bind(...bind.values)], read: () => [], refresh: () => [], finish };
  }

  /**
   * An upsert that writes its value only when the tenant's counts (kept by triggers) have room: a
   * new key needs room in the item count, and a value that grows its item needs room in the bytes.
   * Otherwise the value is NULL, which the NOT NULL column refuses, so the batch it is in fails as
   * a whole (a WHERE that inserted nothing would leave the batch's other writes in place).
   * (`WHERE 1`: SQLite reads an INSERT … SELECT's ON CONFLICT only after a WHERE.)
   */
  #put(ns: string[], key: string, value: Record<string, unknown>, ttl: number | null, now: number, index: ItemIndex): D1PreparedStatement {
    const expires = ttl === null ? null : now + Math.round(ttl * MINUTE);
    const text = JSON.stringify(value);
    return this.db
      .prepare(
        `INSERT INTO store_items (tenant_id, namespace, key, value, created_at, updated_at, expires_at, ttl_minutes, index_text, vec, vec_by)
         SELECT ?1, ?2, ?3, CASE WHEN
             (old.n > 0 OR COALESCE((SELECT n FROM tenant_counts WHERE tenant_id = ?1 AND kind = 'store_items'), 0) < ?6)
             AND (?9 <= old.bytes OR COALESCE((SELECT n FROM tenant_counts WHERE tenant_id = ?1 AND kind = 'store_bytes'), 0) - old.bytes + ?9 <= ?10)
           THEN ?4 END, ?5, ?5, ?7, ?8, ?11, ?12, ?13
         FROM (SELECT COUNT(*) AS n, COALESCE(SUM(length(CAST(namespace AS BLOB)) + length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))
                 + COALESCE(length(CAST(index_text AS BLOB)), 0) + COALESCE(length(vec), 0)), 0) AS bytes FROM store_items
               WHERE tenant_id = ?1 AND namespace = ?2 AND key = ?3) AS old
         WHERE 1
         ON CONFLICT (tenant_id, namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
           expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes,
           index_text = excluded.index_text, vec = excluded.vec, vec_by = excluded.vec_by,
           created_at = CASE WHEN store_items.expires_at <= excluded.updated_at THEN excluded.created_at ELSE store_items.created_at END`,
      )
      .bind(
        this.tenant,
        joined(ns),
        key,
        text,
        now,
        this.limits.items,
        expires,
        ttl,
        utf8Bytes(joined(ns)) + utf8Bytes(key) + utf8Bytes(text) + utf8Bytes(index.text ?? "") + (index.vec?.byteLength ?? 0),
        this.limits.bytes,
        index.text,
        index.vec?.buffer ?? null,
        index.vecBy,
      );
  }

  /** Renews the TTL of these items (those put with one). */
  private async refresh(rows: readonly Pick<Row, "namespace" | "key">[], now: number): Promise<void> {
    if (rows.length === 0) return;
    await this.db
      .prepare(
        `UPDATE store_items SET expires_at = ?2 + CAST(ttl_minutes * ${MINUTE} AS INTEGER)
         WHERE tenant_id = ?1 AND ttl_minutes IS NOT NULL
           AND (namespace, key) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?3))`,
      )
      .bind(this.tenant, now, JSON.stringify(rows.map((r) => [r.namespace, r.key])))
      .run();
  }
}

/**
 * list_namespaces as one statement, matched, cut and paged in SQL, so only the page reaches the Worker:
 * the tenant's live namespaces its grants reach (a prefix's leading labels narrow the index range), each
 * read as a JSON array of its labels (json_quote escapes what a label may hold, and '.' only ever
 * separates labels), matched label by label by prefix and suffix ("*" matching every label, as LangGraph's
 * InMemoryStore matches), cut to max_depth labels, deduplicated, in byte order of the cut namespace
 * (SQLite's BINARY collation compares the UTF-8 bytes), then limit / offset.
 */
function namespacesQuery(tenant: string, p: Principal, op: Extract<StoreOp, { op: "list_namespaces" }>, now: number, bind: Params): string {
  const where = [`tenant_id = ${bind.add(tenant)}`, alive(bind, now)];
  const lead = op.prefix ? op.prefix.slice(0, (op.prefix.indexOf("*") + 1 || op.prefix.length + 1) - 1) : [];
  for (const c of [grantClause(p, bind), prefixClause(lead, bind)]) if (c) where.push(c);
  const match: string[] = [];
  const labelsMatch = (pattern: readonly string[] | undefined, at: (key: string) => string) => {
    if (!pattern || pattern.length === 0) return;
    match.push(
      `depth >= ${bind.add(pattern.length)}`,
      `NOT EXISTS (SELECT 1 FROM json_each(${bind.add(JSON.stringify(pattern))}) m WHERE m.value <> '*' AND json_extract(labels, '$[' || CAST(${at("m.key")} AS INTEGER) || ']') IS NOT m.value)`,
    );
  };
  labelsMatch(op.prefix, (key) => key);
  labelsMatch(op.suffix, (key) => `depth - ${bind.add(op.suffix?.length ?? 0)} + ${key}`);
  const cut =
    op.maxDepth === undefined
      ? "namespace"
      : `CASE WHEN depth <= ?D THEN namespace ELSE substr(namespace, 1, (SELECT sum(length(value)) + count(*) - 1 FROM json_each(labels) WHERE key < ?D)) END`.replaceAll(
          "?D",
          bind.add(op.maxDepth),
        );
  return `SELECT DISTINCT ${cut} AS namespace FROM (
      SELECT namespace, '[' || replace(json_quote(namespace), '.', '","') || ']' AS labels, length(namespace) - length(replace(namespace, '.', '')) + 1 AS depth
      FROM (SELECT DISTINCT namespace FROM store_items WHERE ${where.join(" AND ")}))
    ${match.length ? `WHERE ${match.join(" AND ")}` : ""}
    ORDER BY 1 LIMIT ${bind.add(op.limit ?? 100)} OFFSET ${bind.add(op.offset ?? 0)}`;
}

/** LangGraph's filter operators (FilterOperators in @langchain/langgraph-checkpoint); any other `$` key is refused. */
const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"]);
const COMPARE = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" } as const;
const MAX_CONDITIONS = 100;
const MAX_DEPTH = 16;

const badFilter = (message: string) => new AppError("BEM-146", message);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * `{field: value}` or `{field: {$op: value, …}}`, as LangGraph's InMemoryStore reads them: equality
 * is of type and value (`{field: null}` matches a stored null, not a missing field; `$ne` and `$nin`
 * match a missing field), `$gt`…`$lte` compare numbers with numbers and strings with strings, `$in` /
 * `$nin` take a list. A dotted field reaches nested values. Fields are looked up by key (json_each),
 * never spliced into a JSON path, so any character works; all paths and values travel in one JSON
 * parameter, so the number of conditions does not meet D1's bound-parameter limit.
 */
function filterClause(filter: Record<string, unknown>, bind: Params): string | null {
  if (Object.keys(filter).length === 0) return null;
  const conditions: [string[], unknown][] = [];
  const parts: string[] = [];
  const f = bind.add(null); // set below, once every condition is in
  for (const [field, cond] of Object.entries(filter)) {
    const path = field.split(".");
    if (path.length > MAX_DEPTH) throw badFilter(`Filter field '${field.slice(0, 80)}' is nested deeper than ${MAX_DEPTH} levels`);
    const opEntries = isRecord(cond) && Object.keys(cond).some((k) => k.startsWith("$")) ? Object.entries(cond) : [["$eq", cond] as [string, unknown]];
    for (const [op, value] of opEntries) {
      if (!OPERATORS.has(op)) throw badFilter(`Filter operator '${op.slice(0, 40)}' on '${field.slice(0, 80)}' is not supported (${[...OPERATORS].join(" ")})`);
      const i = conditions.push([path, value]) - 1;
      if (conditions.length > MAX_CONDITIONS) throw badFilter(`A filter holds at most ${MAX_CONDITIONS} conditions`);
      // The field's value in the item: one json_each per label, each keyed by the label from the parameter.
      const from = path.map((_, d) => `json_each(${d === 0 ? "store_items.value" : `j${d - 1}.value`}) j${d}`);
      const on = path.map((_, d) => `j${d}.key = json_extract(${f}, '$[${i}][0][${d}]')`);
      const leaf = `j${path.length - 1}`;
      const want = `json_extract(${f}, '$[${i}][1]')`;
      const exists = (extraFrom: string[], extraWhere: string[]) =>
        `EXISTS (SELECT 1 FROM ${[...from, ...extraFrom].join(", ")} WHERE ${[...on, ...extraWhere].join(" AND ")})`;
      const equal = exists([], [`${leaf}.type IS json_type(${f}, '$[${i}][1]')`, `${leaf}.value IS ${want}`]);
      const member = exists([`json_each(${f}, '$[${i}][1]') l`], [`${leaf}.type IS l.type`, `${leaf}.value IS l.value`]);
      if (op === "$eq") parts.push(equal);
      else if (op === "$ne") parts.push(`NOT ${equal}`);
      else if (op === "$in" || op === "$nin") {
        if (!Array.isArray(value)) throw badFilter(`Filter '${field.slice(0, 80)}': ${op} takes a list`);
        parts.push(op === "$in" ? member : `NOT ${member}`);
      } else {
        const types = typeof value === "number" ? `('integer', 'real')` : typeof value === "string" ? `('text')` : null;
        if (!types) throw badFilter(`Filter '${field.slice(0, 80)}': ${op} compares numbers or strings`);
        parts.push(exists([], [`${leaf}.type IN ${types}`, `${leaf}.value ${COMPARE[op as keyof typeof COMPARE]} ${want}`]));
      }
    }
  }
  bind.values[Number(f.slice(1)) - 1] = JSON.stringify(conditions);
  return parts.length ? balanced(parts, "AND") : null;
}
