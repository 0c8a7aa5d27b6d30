import { CHECKPOINT_CLOCK_SKEW_MS, checkpointIdClock, uuid6Prefix } from "../core/checkpoint-clock";
import { AppError } from "../core/errors";
import type { Writer } from "./langgraph-checkpoint-types";

/**
 * Where a new checkpoint may land without `rewrite_thread` (the right is decided by the policy,
 * src/langgraph/access.ts `writerOf`; this applies it inside the batch's transaction, where the
 * namespace's newest is known). A run extends history: the namespace's first checkpoint, or an id
 * after its newest (LangGraph's own puts, and a fork that becomes the newest). An id below the
 * newest is placed inside history other keys read and resume or fork from by id, so it needs the
 * right, with one allowance for honest clocks: one of an app's machines running behind another
 * writes ids a little below the newest. Such an id goes in when it is the same UUID version as the
 * newest, at most CHECKPOINT_CLOCK_SKEW_MS older than it and than the server's clock (an id of the
 * present: measured from the newest alone, a thread last written long ago took ids between its old
 * checkpoints), continues a checkpoint of the namespace that nothing has continued yet (the newest,
 * or the skewed machine's own previous step), and sorts below nothing but its own ancestors: so it
 * never lands between a checkpoint and the one that continued it, nor inside another branch.
 */
export function refuseInsertion(sql: SqlStorage, put: { ns: string; id: string; parent_id: string | null }, writer: Writer, now = Date.now()): void {
  if (writer.rewrite.allowed) return;
  const newest = newestId(sql, put.ns);
  if (newest === undefined || put.id > newest) return;
  if (
    put.parent_id !== null &&
    withinSkew(put.id, newest, now) &&
    continuesNothingYet(sql, put.ns, put.parent_id) &&
    aboveAllButAncestors(sql, put.ns, put.id, put.parent_id)
  ) {
    return;
  }
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: new checkpoint '${put.id.slice(0, 80)}' sorts below its namespace's newest '${newest.slice(0, 80)}', inside history other keys read (write an id after the newest; one at most 5 minutes of clock skew below it must continue a checkpoint nothing has continued yet)`,
  );
}

function withinSkew(id: string, newest: string, now: number): boolean {
  const a = checkpointIdClock(id);
  const b = checkpointIdClock(newest);
  return a !== undefined && b !== undefined && a.version === b.version && b.ms - a.ms <= CHECKPOINT_CLOCK_SKEW_MS && now - a.ms <= CHECKPOINT_CLOCK_SKEW_MS;
}

/**
 * Every checkpoint of the namespace that sorts above `id` is on the parent chain from `parent`. Those
 * are within the skew window (a few rows); the walk up is capped, since a chain may also pass
 * checkpoints below `id` (the lagging machine's own earlier steps) between them.
 */
function aboveAllButAncestors(sql: SqlStorage, ns: string, id: string, parent: string): boolean {
  const above = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM lg_checkpoints WHERE ns = ? AND id > ?`, ns, id).one().n;
  const ancestors = sql
    .exec<{ n: number }>(
      `WITH RECURSIVE up(id, parent_id, depth) AS (
         SELECT id, parent_id, 0 FROM lg_checkpoints WHERE ns = ? AND id = ?
         UNION ALL SELECT c.id, c.parent_id, up.depth + 1 FROM lg_checkpoints c JOIN up ON c.ns = ? AND c.id = up.parent_id WHERE up.depth < ?
       )
       SELECT COUNT(*) AS n FROM up WHERE id > ?`,
      ns,
      parent,
      ns,
      above + ANCESTOR_WALK,
      id,
    )
    .one().n;
  return above === ancestors;
}

/** How many ancestors below the id the walk passes at most besides those above it. */
const ANCESTOR_WALK = 1000;

/** `parent` is a checkpoint of the namespace, and no checkpoint names it as its parent. */
function continuesNothingYet(sql: SqlStorage, ns: string, parent: string): boolean {
  const exists = sql.exec(`SELECT 1 FROM lg_checkpoints WHERE ns = ? AND id = ?`, ns, parent).toArray().length > 0;
  return exists && sql.exec(`SELECT 1 FROM lg_checkpoints WHERE ns = ? AND parent_id = ? LIMIT 1`, ns, parent).toArray().length === 0;
}

/**
 * Where new pending writes (a task id or index not stored yet) may go without `rewrite_thread`.
 * A run's writes go to the checkpoint its step runs on, which nothing has continued yet. Once a
 * checkpoint has a child it is history: its pending writes are what a later resume or fork from
 * it applies (Command updates, resume values, task outputs), so adding to them plants state in
 * other keys' history. One allowance: LangGraph saves a step's next checkpoint without waiting for
 * the step's writes to be stored, and a saver that serializes asynchronously may send them after
 * it (even after a later step's), so a checkpoint continued only by the writer's own checkpoints
 * still takes them: no other key has built on it, and the writer could have sent them first.
 */
export function refuseWritesOnHistory(sql: SqlStorage, w: { ns: string; checkpoint_id: string; task_id: string }, writer: Writer): void {
  if (writer.rewrite.allowed) return;
  const foreign = foreignChild(sql, w.ns, w.checkpoint_id, writer.key);
  if (foreign === undefined) return;
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: checkpoint '${w.checkpoint_id.slice(0, 80)}' has been continued by another key's checkpoint ('${foreign.slice(0, 80)}'), so new pending writes of task '${w.task_id.slice(0, 80)}' on it would change what a resume or fork from it applies (write to a checkpoint nothing has continued, or fork from this one first)`,
  );
}

/**
 * New pending writes to a checkpoint id not stored (yet) without `rewrite_thread`. LangGraph sends
 * them: its loop chains each put after the one before while a task's writes go out at once, so a
 * fork's resume write can arrive before the fork's put (MemorySaver and the SQL savers key writes by
 * id alone and take them). They go in while this key's put of that id can still come: an id after
 * the namespace's newest (or the namespace's first), or one the clock-skew allowance of
 * refuseInsertion could place, and never one ahead of the clock (refuseIdsAhead's ceiling). Others
 * would wait for a checkpoint that never comes, outside every tuple a read or prune sees.
 */
export function refuseOrphanWrites(sql: SqlStorage, w: { ns: string; checkpoint_id: string }, writer: Writer, now = Date.now()): void {
  if (writer.rewrite.allowed) return;
  if (sql.exec(`SELECT 1 FROM lg_checkpoints WHERE ns = ? AND id = ?`, w.ns, w.checkpoint_id).toArray().length > 0) return;
  const newest = newestId(sql, w.ns);
  const ahead = w.checkpoint_id > uuid6Prefix(now + CHECKPOINT_CLOCK_SKEW_MS);
  if (!ahead && (newest === undefined || w.checkpoint_id > newest || withinSkew(w.checkpoint_id, newest, now))) return;
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: checkpoint '${w.checkpoint_id.slice(0, 80)}' is not stored, and this key could not store it (${ahead ? "its id is ahead of the clock" : `its id sorts below its namespace's newest '${(newest ?? "").slice(0, 80)}'`}), so its pending writes would wait for a checkpoint that never comes`,
  );
}

/**
 * Replacing a stored special write (negative idx: an interrupt, a resume value, an error) without
 * `rewrite_thread`: the same line as new writes, continuation and not id order (a child written on a
 * clock a little behind sorts below its parent, which stays the newest by id while continued). On a
 * checkpoint nothing has continued, replacing is LangGraph's own use whoever wrote the one before:
 * a resumed task that interrupts again, a resume resent. LangGraph stores those before the step's
 * next checkpoint, so once a checkpoint has a child only a late copy of the writer's own write can
 * still arrive (a saver serializing asynchronously, a retried batch): the writer's own special write
 * keeps the own-chain allowance of new writes, and another key's (or one of unknown writer) is
 * replaced only on a checkpoint nothing has continued at all.
 */
export function refuseSpecialReplace(
  sql: SqlStorage,
  w: { ns: string; checkpoint_id: string; task_id: string; channel: string; storedBy: string | null },
  writer: Writer,
): void {
  if (writer.rewrite.allowed) return;
  const own = w.storedBy === writer.key;
  const child = own ? foreignChild(sql, w.ns, w.checkpoint_id, writer.key) : anyChild(sql, w.ns, w.checkpoint_id);
  if (child === undefined) return;
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: the '${w.channel.slice(0, 80)}' write of task '${w.task_id.slice(0, 80)}' on checkpoint '${w.checkpoint_id.slice(0, 80)}' was written by ${own ? "this key" : "another key"}, and the checkpoint has been continued by ${own ? "another key's" : "a"} checkpoint ('${child.slice(0, 80)}'): replacing it would change what a resume or fork from it applies (fork from this checkpoint first)`,
  );
}

/**
 * Replacing the writer's own checkpoint (a put of an id it wrote) without `rewrite_thread`: a step
 * in progress, so the checkpoint is its namespace's newest and nothing but the writer's own
 * checkpoints has continued it. Id order alone does not tell: a child written on a clock a little
 * behind (refuseInsertion's allowance) sorts below its parent, which stays the newest by id after
 * another key has built on it. Otherwise only a retry of the same put goes in (`samePut`, read last:
 * it compares the stored bytes).
 */
export function refuseOwnReplace(sql: SqlStorage, put: { ns: string; id: string }, writer: Writer, samePut: () => boolean): void {
  if (writer.rewrite.allowed) return;
  const newest = newestId(sql, put.ns);
  const foreign = foreignChild(sql, put.ns, put.id, writer.key);
  const history = newest !== undefined && newest > put.id;
  if ((!history && foreign === undefined) || samePut()) return;
  const why = foreign === undefined ? "is no longer its namespace's newest" : `has been continued by another key's checkpoint ('${foreign.slice(0, 80)}')`;
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: checkpoint '${put.id.slice(0, 80)}' ${why}, and replacing it rewrites history (write a new checkpoint id instead)`,
  );
}

/** The namespace's newest checkpoint id (LangGraph's latest), if it has one. */
const newestId = (sql: SqlStorage, ns: string): string | undefined =>
  sql.exec<{ id: string }>(`SELECT id FROM lg_checkpoints WHERE ns = ? ORDER BY id DESC LIMIT 1`, ns).toArray()[0]?.id;

/** A child of `id` another key wrote, found walking down through `key`'s own checkpoints. */
function foreignChild(sql: SqlStorage, ns: string, id: string, key: string): string | undefined {
  // Walk down through the writer's own checkpoints; the first child another key wrote (or nobody known) refuses.
  const foreign = sql
    .exec<{ id: string }>(
      `WITH RECURSIVE own(id) AS (
         SELECT ? UNION SELECT c.id FROM lg_checkpoints c JOIN own ON c.ns = ? AND c.parent_id = own.id WHERE c.writer = ?
       )
       SELECT c.id FROM lg_checkpoints c JOIN own ON c.ns = ? AND c.parent_id = own.id WHERE c.writer IS NOT ? LIMIT 1`,
      id,
      ns,
      key,
      ns,
      key,
    )
    .toArray()[0];
  return foreign?.id;
}

function anyChild(sql: SqlStorage, ns: string, id: string): string | undefined {
  return sql.exec<{ id: string }>(`SELECT id FROM lg_checkpoints WHERE ns = ? AND parent_id = ? LIMIT 1`, ns, id).toArray()[0]?.id;
}
