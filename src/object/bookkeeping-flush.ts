import { errorText, log } from "../core/log";
import { type PendingBookkeeping, sentUsageUpsertSql, usageValues } from "../thread/pending-bookkeeping";
import { touchStatement } from "../thread/thread-list";

/** How long a thread's object lets its runs' bookkeeping gather before it sends it (one D1 batch for every turn in between). */
export const BOOKKEEPING_FLUSH_MS = 1_000;
/** How long after a failed send the object tries again (D1 unreachable: every thread with pending rows retries at this pace). */
export const BOOKKEEPING_RETRY_MS = 30_000;

/**
 * Sends what the thread's runs owe D1 — the usage counter rows and the thread list's newest
 * updated_at — in one batch: the send under way if a try of it failed before, else everything
 * pending. The batch first moves
 * the sender's `bookkeeping_sends` row to this send, and each usage row adds in only if this try did,
 * so a send whose answer was lost after it landed adds nothing when it is sent again. A failure keeps
 * the send's rows in the object (later turns' rows wait behind it), is logged and rethrown. Answers
 * whether there was anything to send.
 */
export async function flushBookkeeping(db: D1Database, pending: PendingBookkeeping): Promise<boolean> {
  const send = pending.next();
  if (!send) return false;
  const attempt = crypto.randomUUID();
  // A delete sends its thread's listing too (before its list removal, which removes it): a delete refused after this
  // send landed leaves the thread as it was, its list entry moved to its newest write.
  const { listing } = send;
  const writes = [
    db
      .prepare(
        `INSERT INTO bookkeeping_sends (sender, seq, attempt, sent_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (sender) DO UPDATE SET seq = excluded.seq, attempt = excluded.attempt, sent_at = excluded.sent_at WHERE excluded.seq > bookkeeping_sends.seq`,
      )
      .bind(send.sender, send.seq, attempt, Date.now()),
    ...send.usage.map((u) => db.prepare(sentUsageUpsertSql).bind(...usageValues(u), send.sender, send.seq, attempt)),
    ...(listing ? [touchStatement(db, listing.tenant, listing.threadId, listing.at)] : []),
  ];
  try {
    await db.batch(writes);
  } catch (e) {
    log.error("bookkeeping", { usage_rows: send.usage.length, listing: listing !== null, seq: send.seq, message: errorText(e) });
    throw e;
  }
  pending.landed(send.seq);
  return true;
}

/** The senders' rows a day after their last send (the hourly cron): no try of a send is still on its way by then. */
export async function purgeBookkeepingSends(db: D1Database, now = Date.now()): Promise<void> {
  await db
    .prepare("DELETE FROM bookkeeping_sends WHERE sent_at < ?")
    .bind(now - 86_400_000)
    .run();
}
