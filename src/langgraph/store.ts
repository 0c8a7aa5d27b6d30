import { z } from "@hono/zod-openapi";
import type { Principal } from "../core/principal";
import { AppError } from "../core/errors";
import { MemoryScope } from "../memory/scope";
import { mayReachScope, tenantOf } from "./access";

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

/**
 * SQL (and args) matching the namespaces the principal's grants reach (policy `reach_namespace`, in SQL); null: all of the tenant.
 * It must match exactly what `grantMatches` allows for a namespace's scope (its first two labels), never more:
 * - "name:prefix*" reaches namespaces whose second label starts with prefix — none when prefix holds '.' or ':',
 *   which labels never do (as text, "organization:acme.*" would start "organization.acme.notes", of organization:acme);
 * - "name:id" reaches [name, id, …] — none when id holds '.' or ':' ("organization:a.b" is not ["organization","a","b"]);
 * - a bare "name" reaches the one-label namespace [name] only: [name, x, …] is scope name:x, which it does not grant.
 */
function grantClause(p: Principal): { sql: string; args: string[] } | null {
  if (p.grants.includes("*")) return null;
  const parts: string[] = [];
  const args: string[] = [];
  const asLabel = (id: string) => !/[.:]/.test(id);
  for (const g of p.grants) {
    if (g.endsWith("*")) {
      // "name:*" and "name:prefix*": namespaces whose text starts with "name." + prefix.
      const at = g.indexOf(":");
      const prefix = g.slice(at + 1, -1);
      if (!asLabel(prefix)) continue;
      const start = `${g.slice(0, at)}.${prefix}`;
      parts.push(`(namespace >= ? AND namespace < ?)`);
      args.push(start, `${start}\u{10ffff}`);
    } else {
      const scope = MemoryScope.parse(g);
      const ns = joined(namespaceOfScope(scope));
      if (scope.id === undefined) {
        parts.push(`namespace = ?`);
        args.push(ns);
      } else if (asLabel(scope.id)) {
        parts.push(`(namespace = ? OR (namespace >= ? AND namespace < ?))`);
        args.push(ns, ...after(ns));
      }
    }
  }
  return parts.length ? { sql: `(${parts.join(" OR ")})`, args } : { sql: "0", args: [] };
}

function prefixClause(prefix: readonly string[]): { sql: string; args: string[] } | null {
  if (prefix.length === 0) return null;
  const ns = joined(prefix);
  return { sql: `(namespace = ? OR (namespace >= ? AND namespace < ?))`, args: [ns, ...after(ns)] };
}

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

export class ScopedStore {
  private readonly tenant: string;

  constructor(
    private readonly db: D1Database,
    private readonly principal: Principal,
    /** MAX_STORE_ITEMS_PER_TENANT: a put of a new key past it is 413 BEM-121; existing keys always update. */
    private readonly maxItems: number = Number.MAX_SAFE_INTEGER,
  ) {
    this.tenant = tenantOf(principal);
  }

  async put(ns: string[], key: string, value: Record<string, unknown>, now = Date.now()): Promise<void> {
    requireNamespace(this.principal, ns);
    checkKey(key);
    // One statement: it writes only when the key exists or the tenant's count (kept by triggers) has room.
    const res = await this.db
      .prepare(
        `INSERT INTO store_items (tenant_id, namespace, key, value, created_at, updated_at) SELECT ?1, ?2, ?3, ?4, ?5, ?5
         WHERE EXISTS (SELECT 1 FROM store_items WHERE tenant_id = ?1 AND namespace = ?2 AND key = ?3)
            OR COALESCE((SELECT n FROM tenant_counts WHERE tenant_id = ?1 AND kind = 'store_items'), 0) < ?6
         ON CONFLICT (tenant_id, namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      )
      .bind(this.tenant, joined(ns), key, JSON.stringify(value), now, this.maxItems)
      .run();
    if (res.meta.changes === 0) {
      throw new AppError(
        "BEM-121",
        `This tenant holds ${this.maxItems} LangGraph store items, the limit (MAX_STORE_ITEMS_PER_TENANT). Delete some to make room.`,
      );
    }
  }

  async get(ns: string[], key: string): Promise<StoreItem | null> {
    requireNamespace(this.principal, ns);
    const row = await this.db
      .prepare(`SELECT namespace, key, value, created_at, updated_at FROM store_items WHERE tenant_id = ? AND namespace = ? AND key = ?`)
      .bind(this.tenant, joined(ns), key)
      .first<Row>();
    return row ? toItem(row) : null;
  }

  async delete(ns: string[], key: string): Promise<void> {
    requireNamespace(this.principal, ns);
    await this.db.prepare(`DELETE FROM store_items WHERE tenant_id = ? AND namespace = ? AND key = ?`).bind(this.tenant, joined(ns), key).run();
  }

  /** Items under the prefix the key reaches, newest update first, filtered by value fields. (No semantic index: `query` is not used.) */
  async search(prefix: string[], opts: { filter?: Record<string, unknown>; limit?: number; offset?: number }): Promise<StoreItem[]> {
    checkLabels(prefix, true);
    const where = [`tenant_id = ?`];
    const args: unknown[] = [this.tenant];
    for (const c of [prefixClause(prefix), grantClause(this.principal), filterClause(opts.filter ?? {})]) {
      if (c) where.push(c.sql), args.push(...c.args);
    }
    const rows = await this.db
      .prepare(
        `SELECT namespace, key, value, created_at, updated_at FROM store_items WHERE ${where.join(" AND ")} ORDER BY updated_at DESC, namespace, key LIMIT ? OFFSET ?`,
      )
      .bind(...args, opts.limit ?? 10, opts.offset ?? 0)
      .all<Row>();
    return rows.results.map(toItem);
  }

  /** Distinct namespaces the key reaches, matched by prefix / suffix ("*" matches any label), cut to maxDepth. */
  async listNamespaces(opts: { prefix?: string[]; suffix?: string[]; maxDepth?: number; limit?: number; offset?: number }): Promise<string[][]> {
    const where = [`tenant_id = ?`];
    const args: unknown[] = [this.tenant];
    const grant = grantClause(this.principal);
    if (grant) where.push(grant.sql), args.push(...grant.args);
    const rows = await this.db
      .prepare(`SELECT DISTINCT namespace FROM store_items WHERE ${where.join(" AND ")} ORDER BY namespace`)
      .bind(...args)
      .all<{ namespace: string }>();
    const seen = new Set<string>();
    const out: string[][] = [];
    for (const r of rows.results) {
      let ns = r.namespace.split(".");
      if (opts.prefix && !labelsMatch(ns.slice(0, opts.prefix.length), opts.prefix)) continue;
      if (opts.suffix && (ns.length < opts.suffix.length || !labelsMatch(ns.slice(ns.length - opts.suffix.length), opts.suffix))) continue;
      if (opts.maxDepth !== undefined) ns = ns.slice(0, opts.maxDepth);
      const k = ns.join(".");
      if (seen.has(k)) continue;
      seen.add(k);
      out.push(ns);
    }
    const offset = opts.offset ?? 0;
    return out.slice(offset, offset + (opts.limit ?? 100));
  }
}

const labelsMatch = (labels: string[], pattern: readonly string[]) => labels.length === pattern.length && pattern.every((p, i) => p === "*" || p === labels[i]);

const OPS = { $eq: "IS", $ne: "IS NOT", $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" } as const;
type Op = keyof typeof OPS;

/** `{field: value}` or `{field: {$op: value}}`; dotted fields reach nested values. */
function filterClause(filter: Record<string, unknown>): { sql: string; args: unknown[] } | null {
  const parts: string[] = [];
  const args: unknown[] = [];
  for (const [field, cond] of Object.entries(filter)) {
    const path = `$${field
      .split(".")
      .map((p) => `."${p.replaceAll('"', '""')}"`)
      .join("")}`;
    const isOps = typeof cond === "object" && cond !== null && !Array.isArray(cond) && Object.keys(cond).every((k) => k in OPS);
    const conds: [Op, unknown][] = isOps ? (Object.entries(cond) as [Op, unknown][]) : [["$eq", cond]];
    for (const [op, value] of conds) {
      const isObject = typeof value === "object" && value !== null;
      parts.push(isObject ? `json_extract(value, ?) ${OPS[op]} json(?)` : `json_extract(value, ?) ${OPS[op]} ?`);
      args.push(path, sqlValue(value));
    }
  }
  return parts.length ? { sql: parts.join(" AND "), args } : null;
}

function sqlValue(v: unknown): unknown {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "object" && v !== null) return JSON.stringify(v);
  return v ?? null;
}
