import { errorText, log } from "../core/log";
import { usageRowStatement } from "../pipeline/usage";
import type { PendingBookkeeping } from "../thread/pending-bookkeeping";
import { touchStatement } from "../thread/thread-list";

/** How long a thread's object lets its runs' bookkeeping gather before it sends it (one D1 batch for every turn in between). */
export const BOOKKEEPING_FLUSH_MS = 1_000;
/** How long after a failed send the object tries again (D1 unreachable: every thread with pending rows retries at this pace). */
export const BOOKKEEPING_RETRY_MS = 30_000;

/**
 * Sends what the thread's runs owe D1 — the usage counter rows and the thread list's newest
 * updated_at — in one batch. `listing: false` (the thread is being deleted) sends the usage only.
 * A failure puts back everything taken, the list entry a delete did not send included (later turns
 * add to them, the next send takes them all), is logged and rethrown.
 */
export async function flushBookkeeping(db: D1Database, pending: PendingBookkeeping, opts: { listing: boolean }): Promise<void> {
  const taken = pending.take();
  const listing = opts.listing ? taken.listing : null;
  const writes = [...taken.usage.map((u) => usageRowStatement(db, u)), ...(listing ? [touchStatement(db, listing.tenant, listing.threadId, listing.at)] : [])];
  if (writes.length === 0) return;
  try {
    await db.batch(writes);
  } catch (e) {
    pending.putBack(taken);
    log.error("bookkeeping", { usage_rows: taken.usage.length, listing: listing !== null, message: errorText(e) });
    throw e;
  }
}
