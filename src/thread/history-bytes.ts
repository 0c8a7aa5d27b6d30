import { AppError } from "../core/errors";
import type { ThreadMeta } from "./meta";

/** Default cap on one thread's checkpoint history, when MAX_THREAD_HISTORY_BYTES is unset (64 MiB). */
export const DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024;

const utf8 = new TextEncoder();

/**
 * Checkpoint history grows with every write and never shrinks (time travel needs it), so
 * MAX_THREAD_BYTES, which counts only the live messages and channels, does not bound it: a
 * channel set again and again, or a message replaced again and again, stays small while its
 * history grows. This is that bound: the bytes of every stored write, kept as a running total
 * in the thread's meta table (summed once from the writes of a thread older than it).
 *
 * Call inside the checkpoint's transaction, before its writes are stored: over the cap it
 * throws 413 BEM-019 and the whole update rolls back. Returns the new total, which the caller
 * stores with the checkpoint's head (ThreadMeta.setHead: one statement for both); a caller that
 * keeps it (the thread's only writer) passes it back as `known` and saves the read.
 */
export function chargeHistory(sql: SqlStorage, meta: ThreadMeta, writes: readonly string[], maxBytes: number, known?: number): number {
  const added = writes.reduce((n, w) => n + utf8.encode(w).length, 0);
  const held = known ?? heldHistory(sql, meta);
  if (added > 0 && held + added > maxBytes) {
    throw new AppError(
      "BEM-019",
      `The thread's history would hold ${held + added} bytes; the limit is ${maxBytes} (MAX_THREAD_HISTORY_BYTES). Delete the thread or start a new one.`,
    );
  }
  return held + added;
}

/** The running total as stored (summed from the writes for a thread older than it). */
function heldHistory(sql: SqlStorage, meta: ThreadMeta): number {
  const stored = meta.value("history_bytes");
  return stored !== undefined ? Number(stored) : sql.exec<{ b: number }>(`SELECT COALESCE(SUM(length(CAST(json AS BLOB))), 0) AS b FROM writes`).one().b;
}
