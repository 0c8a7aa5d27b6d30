import { errorText, log } from "../core/log";
import { ThreadClient } from "./client";

/** Expired response threads one cron run deletes, and how many at once (each is its object's delete and its D1 rows). */
export const PURGE_BATCH = 1_000;
const AT_ONCE = 10;

/**
 * The hourly cron's part for one-off response threads (thread-list.ts ThreadKind): each one past its
 * expiry is deleted as DELETE /v1/threads/:id deletes it (its object's storage, stored responses, list
 * row and quota count). A thread busy with a run, or a delete that failed, is logged and tried again
 * next hour; a write since the select moved its expiry, which the object's delete does not see, so
 * the row is read again just before.
 */
export async function purgeExpiredThreads(env: Env, now = Date.now()): Promise<{ purged: number }> {
  const { results } = await env.DB.prepare("SELECT tenant_id, thread_id FROM threads WHERE expires_at IS NOT NULL AND expires_at < ? LIMIT ?")
    .bind(now, PURGE_BATCH)
    .all<{ tenant_id: string; thread_id: string }>();
  let purged = 0;
  for (let i = 0; i < results.length; i += AT_ONCE) {
    await Promise.all(
      results.slice(i, i + AT_ONCE).map(async (r) => {
        try {
          const still = await env.DB.prepare("SELECT 1 AS x FROM threads WHERE tenant_id = ? AND thread_id = ? AND expires_at < ?")
            .bind(r.tenant_id, r.thread_id, now)
            .first();
          if (!still) return;
          await new ThreadClient(env, r.tenant_id, r.thread_id).destroy();
          purged++;
        } catch (e) {
          log.error("purge-threads", { message: errorText(e) });
        }
      }),
    );
  }
  if (purged > 0) log.info("purge-threads", { purged });
  return { purged };
}
