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
