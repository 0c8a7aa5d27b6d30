import { purgeExpiredFacts } from "./d1-facts-backend";
import { log } from "../log";

/**
 * The scheduled task (cron in wrangler.toml): removes expired facts, with their
 * history, full-text rows and counts (the facts triggers). Loading already skips
 * expired facts, so a late or failed purge only costs storage.
 */
export async function scheduledPurge(env: Pick<Env, "DB">, now = Date.now()): Promise<{ purged: number }> {
  const purged = await purgeExpiredFacts(env.DB, now);
  if (purged > 0) log.info("purge", { purged });
  return { purged };
}
