import { AppError } from "../core/errors";
import { touchStatement } from "../thread/thread-list";

/**
 * D1 records of conversations, and of responses stored before they moved into their
 * threads' objects (src/thread/stored-responses.ts; those are read and deleted here, never
 * written). Every query is bound to the caller's tenant, so another tenant's id reads as
 * "not found" (never its data).
 */
export type ResponseRecord = { id: string; thread_id: string; checkpoint_id: string; body: Record<string, unknown>; input: unknown[]; created_at: number };

type Row = { id: string; thread_id: string; checkpoint_id: string; body: string; input: string; created_at: number };

/** The stored response, or BEM-100. */
export async function requireResponse(db: D1Database, tenant: string, id: string): Promise<ResponseRecord> {
  const row = await db
    .prepare(`SELECT id, thread_id, checkpoint_id, body, input, created_at FROM responses WHERE tenant_id = ? AND id = ?`)
    .bind(tenant, id)
    .first<Row>();
  if (!row) throw new AppError("BEM-100", `No response '${id.slice(0, 80)}'`);
  return { ...row, body: JSON.parse(row.body) as Record<string, unknown>, input: JSON.parse(row.input) as unknown[] };
}

export async function deleteResponse(db: D1Database, tenant: string, id: string): Promise<boolean> {
  const r = await db.prepare(`DELETE FROM responses WHERE tenant_id = ? AND id = ?`).bind(tenant, id).run();
  return r.meta.changes > 0;
}

export type ConversationRecord = { id: string; metadata: Record<string, string>; created_at: number };

/**
 * Writes a conversation's record; `listed`: a new conversation is a thread, listed (and counted
 * against MAX_THREADS_PER_TENANT) in the same batch, even before it holds an item.
 */
export async function saveConversation(db: D1Database, tenant: string, c: ConversationRecord, opts: { listed?: boolean } = {}): Promise<void> {
  const record = db
    .prepare(
      `INSERT INTO conversations (tenant_id, id, metadata, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (tenant_id, id) DO UPDATE SET metadata = excluded.metadata`,
    )
    .bind(tenant, c.id, JSON.stringify(c.metadata), c.created_at);
  await db.batch(opts.listed ? [record, touchStatement(db, tenant, c.id, c.created_at)] : [record]);
}

/**
 * A conversation is any thread of the tenant: one made by POST /v1/conversations
 * (with metadata) or one a chat, invoke or response wrote (empty metadata).
 */
export async function findConversation(db: D1Database, tenant: string, id: string): Promise<ConversationRecord | null> {
  const [conv, thread] = await db.batch<{ metadata?: string; created_at: number }>([
    db.prepare(`SELECT metadata, created_at FROM conversations WHERE tenant_id = ? AND id = ?`).bind(tenant, id),
    db.prepare(`SELECT created_at FROM threads WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, id),
  ]);
  const c = conv?.results[0];
  if (c?.metadata !== undefined) return { id, metadata: JSON.parse(c.metadata) as Record<string, string>, created_at: c.created_at };
  const t = thread?.results[0];
  return t ? { id, metadata: {}, created_at: t.created_at } : null;
}

export async function requireConversation(db: D1Database, tenant: string, id: string): Promise<ConversationRecord> {
  const c = await findConversation(db, tenant, id);
  if (!c) throw new AppError("BEM-102", `No conversation '${id.slice(0, 80)}'`);
  return c;
}

export async function deleteConversationRecords(db: D1Database, tenant: string, id: string): Promise<void> {
  await db.batch([
    db.prepare(`DELETE FROM conversations WHERE tenant_id = ? AND id = ?`).bind(tenant, id),
    db.prepare(`DELETE FROM responses WHERE tenant_id = ? AND thread_id = ?`).bind(tenant, id),
  ]);
}
