import { z } from "@hono/zod-openapi";
import { decodeCursor, encodeCursor } from "../core/cursor";

// D1 index of the threads a tenant has written, for listing (the Durable Object holds the content). Every query is bound to the tenant.

/**
 * What a thread is for: a `conversation` (chat, invoke, Conversations, a named thread) or the thread of a
 * one-off Responses call (`response`: no conversation, previous_response_id or X-Thread-Id), which is kept
 * 30 days after its last write as OpenAI keeps stored responses, then deleted by the hourly cron, and
 * counted against MAX_RESPONSE_THREADS_PER_TENANT, not MAX_THREADS_PER_TENANT.
 */
export const ThreadKind = z.enum(["conversation", "response"]);
export type ThreadKind = z.infer<typeof ThreadKind>;
export const RESPONSE_THREAD_TTL_MS = 30 * 86_400_000;

export const ThreadSummary = z
  .object({
    thread_id: z.string(),
    created_at: z.number().int(),
    updated_at: z.number().int(),
    kind: ThreadKind,
    expires_at: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "A response thread's: when the cron deletes it (30 days after its last write); null for a conversation" }),
  })
  .openapi("ThreadSummary");
export type ThreadSummary = z.infer<typeof ThreadSummary>;

export const ThreadList = z
  .object({ threads: z.array(ThreadSummary), next_before: z.string().nullable() })
  .openapi("ThreadList", { description: "Most recently updated first; pass next_before to get the next page." });
export type ThreadList = z.infer<typeof ThreadList>;

/** Records a write to the thread (creates the row on first write, of `kind`). */
export async function touchThread(db: D1Database, tenant: string, threadId: string, now = Date.now(), kind: ThreadKind = "conversation"): Promise<void> {
  await touchStatement(db, tenant, threadId, now, kind).run();
}

/** The thread's list row: its kind is its first write's; a response thread's expiry moves with every write. */
export function touchStatement(db: D1Database, tenant: string, threadId: string, now = Date.now(), kind: ThreadKind = "conversation"): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO threads (tenant_id, thread_id, created_at, updated_at, kind, expires_at) VALUES (?1, ?2, ?3, ?3, ?4, ?5)
       ON CONFLICT (tenant_id, thread_id) DO UPDATE SET updated_at = MAX(threads.updated_at, excluded.updated_at),
         expires_at = CASE WHEN threads.expires_at IS NULL THEN NULL ELSE MAX(threads.updated_at, excluded.updated_at) + ?6 END`,
    )
    .bind(tenant, threadId, now, kind, kind === "response" ? now + RESPONSE_THREAD_TTL_MS : null, RESPONSE_THREAD_TTL_MS);
}

/** Whether the tenant has thread `id` listed or a conversation record of that id (created empty, not yet written). */
export async function conversationExists(db: D1Database, tenant: string, id: string): Promise<boolean> {
  const row = await db
    .prepare(
      "SELECT EXISTS (SELECT 1 FROM conversations WHERE tenant_id = ?1 AND id = ?2) OR EXISTS (SELECT 1 FROM threads WHERE tenant_id = ?1 AND thread_id = ?2) AS found",
    )
    .bind(tenant, id)
    .first<{ found: number }>();
  return row?.found === 1;
}

/**
 * A deleted thread leaves nothing that names it: its list entry, its stored responses, its conversation
 * record, and the LangGraph index row of the same id (the object's deleteAll took those checkpoints too,
 * so the row would only list an empty thread and keep counting against the thread quota).
 */
export async function forgetThread(db: D1Database, tenant: string, threadId: string): Promise<void> {
  await db.batch([
    db.prepare(`DELETE FROM threads WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, threadId),
    db.prepare(`DELETE FROM responses WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, threadId),
    db.prepare(`DELETE FROM conversations WHERE tenant_id = ? AND id = ?`).bind(tenant, threadId),
    db.prepare(`DELETE FROM langgraph_threads WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, threadId),
  ]);
}

/** Which threads a caller may see (from the policy's readableThreads): all, or these ids and id prefixes. */
export type ThreadFilter = { all: true } | { all: false; exact: readonly string[]; prefixes: readonly string[] };

/** The filter as SQL; prefixes compare by substr with the length inlined (a computed integer), so each costs one bound value. */
export function threadFilterSql(f: ThreadFilter): { sql: string; values: string[] } {
  if (f.all) return { sql: "", values: [] };
  const terms = [...f.exact.map(() => "thread_id = ?"), ...f.prefixes.map((p) => (p === "" ? "1" : `substr(thread_id, 1, ${p.length}) = ?`))];
  if (terms.length === 0) return { sql: " AND 0", values: [] };
  return { sql: ` AND (${terms.join(" OR ")})`, values: [...f.exact, ...f.prefixes.filter((p) => p !== "")] };
}

/** The id filter of a search: ids containing `text`, ignoring ASCII case (thread ids are ASCII); instr needs no escaping. */
function containsSql(text: string | undefined): { sql: string; values: string[] } {
  return text ? { sql: " AND instr(lower(thread_id), ?) > 0", values: [text.toLowerCase()] } : { sql: "", values: [] };
}

/**
 * A page of the tenant's threads, newest first. Both filters (the caller's grants, an id
 * substring) are in the WHERE clause, before the LIMIT, so a page is never emptied by
 * newer rows the caller may not see.
 */
export async function listThreads(
  db: D1Database,
  tenant: string,
  opts: { limit?: number; before?: string; only?: ThreadFilter; idContains?: string; kind?: ThreadKind } = {},
): Promise<ThreadList> {
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 20), 1), 100);
  const grants = threadFilterSql(opts.only ?? { all: true });
  const contains = containsSql(opts.idContains);
  const kind = opts.kind ? { sql: " AND kind = ?", values: [opts.kind] } : { sql: "", values: [] };
  const only = { sql: grants.sql + contains.sql + kind.sql, values: [...grants.values, ...contains.values, ...kind.values] };
  const cols = `SELECT thread_id, created_at, updated_at, kind, expires_at FROM threads`;
  const order = `ORDER BY updated_at DESC, thread_id DESC LIMIT ?`;
  const stmt = opts.before
    ? (() => {
        const c = decodeCursor("threads", opts.before, "before");
        return db
          .prepare(`${cols} WHERE tenant_id = ?${only.sql} AND (updated_at < ? OR (updated_at = ? AND thread_id < ?)) ${order}`)
          .bind(tenant, ...only.values, c.at, c.at, c.id, limit + 1);
      })()
    : db.prepare(`${cols} WHERE tenant_id = ?${only.sql} ${order}`).bind(tenant, ...only.values, limit + 1);
  const rows = (await stmt.all<ThreadSummary>()).results;
  const threads = rows.slice(0, limit);
  const last = threads[threads.length - 1];
  return { threads, next_before: rows.length > limit && last ? encodeCursor("threads", { at: last.updated_at, id: last.thread_id }) : null };
}
