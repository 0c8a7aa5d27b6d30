import { randomHex } from "../core/encoding";
/** D1 records of task outcomes: tasks_done (idempotency) and dead_letters (kept reasons). */

export async function isTaskDone(db: D1Database, taskId: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS done FROM tasks_done WHERE task_id = ?").bind(taskId).first<{ done: number }>()) !== null;
}

/** Records completion; a second completion of the same id changes nothing. */
export async function markTaskDone(db: D1Database, t: { id: string; tenant: string; kind: string }, result: unknown, now = Date.now()): Promise<void> {
  await db
    .prepare("INSERT INTO tasks_done (task_id, tenant_id, kind, result, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO NOTHING")
    .bind(t.id, t.tenant, t.kind, JSON.stringify(result ?? null), now)
    .run();
}

/**
 * How long a task's record (done or dead-lettered) is kept: a month past every queue's retries (a message
 * lives at most days), as webhook deliveries are kept. Every turn of an agent with `extract:` queues a
 * task whoever runs it, so a member key's turns wrote a row each that was kept for good.
 */
export const TASK_RECORD_MS = 30 * 86_400_000;

/** The hourly cron: removes task records older than TASK_RECORD_MS (their status then reads pending, as an unknown id's does). */
export async function purgeTaskRecords(db: D1Database, now = Date.now()): Promise<void> {
  const before = now - TASK_RECORD_MS;
  await db.batch([
    db.prepare("DELETE FROM tasks_done WHERE created_at < ?").bind(before),
    db.prepare("DELETE FROM dead_letters WHERE created_at < ?").bind(before),
  ]);
}

/** Bodies are kept for inspection, but a dead letter never grows beyond this. */
export const MAX_DEAD_LETTER_BODY = 32_768;
export const MAX_DEAD_LETTER_REASON = 1000;

export type DeadLetter = {
  id: string;
  task_id: string | null;
  kind: string | null;
  body: string;
  reason: string;
  attempts: number;
  created_at: number;
};

export async function recordDeadLetter(
  db: D1Database,
  d: { tenant: string; taskId: string | null; kind: string | null; body: string; reason: string; attempts: number },
  now = Date.now(),
): Promise<string> {
  const id = `dl_${randomHex()}`;
  await db
    .prepare("INSERT INTO dead_letters (id, tenant_id, task_id, kind, body, reason, attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    .bind(id, d.tenant, d.taskId, d.kind, d.body.slice(0, MAX_DEAD_LETTER_BODY), d.reason.slice(0, MAX_DEAD_LETTER_REASON), d.attempts, now)
    .run();
  return id;
}

/** A tenant's dead letters, newest first, paged by (created_at, id). */
export async function listDeadLetters(db: D1Database, tenant: string, limit: number, before?: { created_at: number; id: string }): Promise<DeadLetter[]> {
  const b = before ?? { created_at: Number.MAX_SAFE_INTEGER, id: "" };
  const { results } = await db
    .prepare(
      "SELECT id, task_id, kind, body, reason, attempts, created_at FROM dead_letters WHERE tenant_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) " +
        "ORDER BY created_at DESC, id DESC LIMIT ?",
    )
    .bind(tenant, b.created_at, b.created_at, b.id || "\uffff", limit)
    .all<DeadLetter>();
  return results;
}

export type TaskStatus = { status: "done"; result: unknown } | { status: "dead_lettered"; reason: string } | { status: "pending" };

/** A task's outcome as its tenant may see it; unknown and foreign ids both read as pending. */
export async function taskStatus(db: D1Database, tenant: string, taskId: string): Promise<TaskStatus> {
  const done = await db.prepare("SELECT result FROM tasks_done WHERE task_id = ? AND tenant_id = ?").bind(taskId, tenant).first<{ result: string | null }>();
  if (done) return { status: "done", result: JSON.parse(done.result ?? "null") as unknown };
  const dead = await db
    .prepare("SELECT reason FROM dead_letters WHERE task_id = ? AND tenant_id = ? ORDER BY created_at DESC LIMIT 1")
    .bind(taskId, tenant)
    .first<{ reason: string }>();
  return dead ? { status: "dead_lettered", reason: dead.reason } : { status: "pending" };
}
