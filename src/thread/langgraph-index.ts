import { threadFilterSql, type ThreadFilter } from "./thread-list";

/**
 * D1 index of the threads that hold LangGraph checkpoints, per tenant: what `list` without a thread id walks
 * (the checkpoints live in each thread's object). Written and removed inside that object under the thread's
 * lease, as the thread list is, so a delete queued behind a put removes the row the put wrote.
 */
export async function indexThread(db: D1Database, tenant: string, threadId: string, now = Date.now()): Promise<void> {
  await db
    .prepare(`INSERT INTO langgraph_threads (tenant_id, thread_id, created_at) VALUES (?, ?, ?) ON CONFLICT (tenant_id, thread_id) DO NOTHING`)
    .bind(tenant, threadId, now)
    .run();
}

export async function unindexThread(db: D1Database, tenant: string, threadId: string): Promise<void> {
  await db.prepare(`DELETE FROM langgraph_threads WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, threadId).run();
}

/**
 * A page of the tenant's LangGraph thread ids the caller reaches (`only`: the policy's readableThreads,
 * applied in the query, before its limit, as GET /v1/threads does), in id order, after `after`.
 */
export async function indexedThreads(db: D1Database, tenant: string, after: string, limit: number, only: ThreadFilter): Promise<string[]> {
  const reach = threadFilterSql(only);
  const rows = await db
    .prepare(`SELECT thread_id FROM langgraph_threads WHERE tenant_id = ?${reach.sql} AND thread_id > ? ORDER BY thread_id LIMIT ?`)
    .bind(tenant, ...reach.values, after, limit)
    .all<{ thread_id: string }>();
  return rows.results.map((r) => r.thread_id);
}
