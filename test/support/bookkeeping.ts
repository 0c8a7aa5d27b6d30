import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { threadObjectName } from "../../src/thread/thread-id";

/**
 * Sends what the tenant's thread objects still owe D1 (usage, the thread list's updated_at): a turn
 * that follows another within BOOKKEEPING_FLUSH_MS leaves its rows for the object's next batch, up to
 * 1 s after its answer (src/object/bookkeeping-flush.ts). A test that compares D1 before and after a
 * call settles this first, so an earlier turn's late write is not taken for the call's.
 */
export async function settleBookkeeping(tenant: string, threads?: readonly string[]): Promise<void> {
  const ids =
    threads ??
    (await env.DB.prepare("SELECT thread_id FROM threads WHERE tenant_id = ?").bind(tenant).all<{ thread_id: string }>()).results.map((r) => r.thread_id);
  await Promise.all(
    ids.map(async (id) => {
      const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, id)));
      // A turn's own send leaves after its answer, under the object's waitUntil: wait for it, then run the alarm's.
      await stub.settled();
      await runDurableObjectAlarm(stub);
    }),
  );
}
