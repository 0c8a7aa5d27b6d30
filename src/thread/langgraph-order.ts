import { CHECKPOINT_CLOCK_SKEW_MS, checkpointIdClock } from "../core/checkpoint-clock";
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
 * newest, at most CHECKPOINT_CLOCK_SKEW_MS older, and continues a checkpoint of the namespace that
 * nothing has continued yet (the newest, or the skewed machine's own previous step), so it never
 * lands between a checkpoint and the one that continued it.
 */
export function refuseInsertion(sql: SqlStorage, put: { ns: string; id: string; parent_id: string | null }, writer: Writer): void {
  if (writer.rewrite.allowed) return;
  const newest = sql.exec<{ id: string }>(`SELECT id FROM lg_checkpoints WHERE ns = ? ORDER BY id DESC LIMIT 1`, put.ns).toArray()[0]?.id;
  if (newest === undefined || put.id > newest) return;
  if (put.parent_id !== null && withinSkew(put.id, newest) && continuesNothingYet(sql, put.ns, put.parent_id)) return;
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: new checkpoint '${put.id.slice(0, 80)}' sorts below its namespace's newest '${newest.slice(0, 80)}', inside history other keys read (write an id after the newest; one at most 5 minutes of clock skew below it must continue a checkpoint nothing has continued yet)`,
  );
}

function withinSkew(id: string, newest: string): boolean {
  const a = checkpointIdClock(id);
  const b = checkpointIdClock(newest);
  return a !== undefined && b !== undefined && a.version === b.version && b.ms - a.ms <= CHECKPOINT_CLOCK_SKEW_MS;
}

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
  // Walk down through the writer's own checkpoints; the first child another key wrote (or nobody known) refuses.
  const foreign = sql
    .exec<{ id: string }>(
      `WITH RECURSIVE own(id) AS (
         SELECT ? UNION SELECT c.id FROM lg_checkpoints c JOIN own ON c.ns = ? AND c.parent_id = own.id WHERE c.writer = ?
       )
       SELECT c.id FROM lg_checkpoints c JOIN own ON c.ns = ? AND c.parent_id = own.id WHERE c.writer IS NOT ? LIMIT 1`,
      w.checkpoint_id,
      w.ns,
      writer.key,
      w.ns,
      writer.key,
    )
    .toArray()[0];
  if (foreign === undefined) return;
  throw new AppError(
    "BEM-022",
    `${writer.rewrite.message}: checkpoint '${w.checkpoint_id.slice(0, 80)}' has been continued by another key's checkpoint ('${foreign.id.slice(0, 80)}'), so new pending writes of task '${w.task_id.slice(0, 80)}' on it would change what a resume or fork from it applies (write to a checkpoint nothing has continued, or fork from this one first)`,
  );
}
