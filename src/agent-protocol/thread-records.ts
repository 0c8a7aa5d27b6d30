import { z } from "@hono/zod-openapi";
import { type ThreadFilter, threadFilterSql } from "../thread/thread-list";

/**
 * A thread's row in the tenant's D1 thread list, with the metadata LangGraph's thread API keeps on it
 * (migration 0030). The list is where every API's threads are (chat, Responses, invoke, these routes),
 * so a thread any of them started is found here, and one made here is listed by GET /v1/threads.
 * Every query is bound to the tenant.
 */
export type ThreadRecord = { thread_id: string; created_at: number; updated_at: number; metadata: Record<string, unknown> };

/** A metadata key: no `"` or `\\`, so it quotes safely into a JSON path (`$."key"`) of a search. */
const MetadataKey = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[^"\\]+$/, 'a metadata key has no " or \\');

/** Metadata as clients send it: a JSON object of at most 16 KB (LangGraph's is a JSONB object). */
export const Metadata = z.record(MetadataKey, z.unknown()).refine((m) => JSON.stringify(m).length <= 16_384, { message: "metadata is at most 16 KB of JSON" });

type Row = { thread_id: string; created_at: number; updated_at: number; metadata: string | null };

const parsed = (r: Row): ThreadRecord => ({
  thread_id: r.thread_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  metadata: r.metadata ? (JSON.parse(r.metadata) as Record<string, unknown>) : {},
});

const COLS = "SELECT thread_id, created_at, updated_at, metadata FROM threads";

export async function getRecord(db: D1Database, tenant: string, threadId: string): Promise<ThreadRecord | null> {
  const row = await db.prepare(`${COLS} WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, threadId).first<Row>();
  return row ? parsed(row) : null;
}

/** Lists the thread with this metadata unless it is listed already; true when this call listed it. */
export async function insertRecord(db: D1Database, tenant: string, threadId: string, metadata: Record<string, unknown>, now = Date.now()): Promise<boolean> {
  const r = await db
    .prepare(`INSERT INTO threads (tenant_id, thread_id, created_at, updated_at, metadata) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
    .bind(tenant, threadId, now, now, JSON.stringify(metadata))
    .run();
  return r.meta.changes > 0;
}

/**
 * Merges `patch` into the thread's metadata (top-level keys, as LangGraph's PATCH does), listing the
 * thread if it is not yet (a thread a run just started, whose list entry may still be on its way).
 * A patch that changes nothing leaves the thread as it was, its updated_at too.
 */
export async function mergeMetadata(db: D1Database, tenant: string, threadId: string, patch: Record<string, unknown>, now = Date.now()): Promise<void> {
  await db
    .prepare(
      `INSERT INTO threads (tenant_id, thread_id, created_at, updated_at, metadata) VALUES (?1, ?2, ?3, ?3, ?4)
       ON CONFLICT (tenant_id, thread_id) DO UPDATE SET metadata = json_patch(COALESCE(threads.metadata, '{}'), ?4), updated_at = MAX(threads.updated_at, ?3)
       WHERE json_patch(COALESCE(threads.metadata, '{}'), ?4) IS NOT json(COALESCE(threads.metadata, '{}'))`,
    )
    .bind(tenant, threadId, now, JSON.stringify(patch))
    .run();
}

export const SortBy = z.enum(["thread_id", "created_at", "updated_at", "state_updated_at"]);
export type SearchQuery = {
  metadata?: Record<string, unknown>;
  ids?: string[];
  limit: number;
  offset: number;
  sortBy: z.infer<typeof SortBy>;
  sortOrder: "asc" | "desc";
  only: ThreadFilter;
};

/**
 * A page of the tenant's threads the caller may reach whose metadata holds every key of `metadata`
 * with an equal value (LangGraph's containment test, on top-level keys), in the asked order.
 */
export async function searchRecords(db: D1Database, tenant: string, q: SearchQuery): Promise<ThreadRecord[]> {
  const grants = threadFilterSql(q.only);
  const where: string[] = [];
  const values: unknown[] = [...grants.values];
  for (const [key, value] of Object.entries(q.metadata ?? {})) {
    // json_extract gives a scalar as its SQL value and an object or array as minified JSON, both sides alike.
    where.push(`json_extract(metadata, ?) = json_extract(?, '$')`);
    values.push(`$."${key}"`, JSON.stringify(value));
  }
  if (q.ids) {
    where.push(`thread_id IN (${q.ids.map(() => "?").join(", ")})`);
    values.push(...q.ids);
  }
  const column = q.sortBy === "state_updated_at" ? "updated_at" : q.sortBy;
  const direction = q.sortOrder === "asc" ? "ASC" : "DESC";
  const sql = `${COLS} WHERE tenant_id = ?${grants.sql}${where.map((w) => ` AND ${w}`).join("")} ORDER BY ${column} ${direction}, thread_id ${direction} LIMIT ? OFFSET ?`;
  const rows = await db
    .prepare(sql)
    .bind(tenant, ...values, q.limit, q.offset)
    .all<Row>();
  return rows.results.map(parsed);
}
