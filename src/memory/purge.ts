import { purgeExpiredFacts } from "./d1-facts-backend";
import { hashOlderFacts, markOlderFacts } from "./fact-backfill";
import { embedOlderFacts } from "./fact-vectors";
import { factsEmbedder } from "../embed/embedders";
import type { EmbedHolder } from "../embed/embed-cache";
import { log } from "../core/log";

/**
 * The scheduled task (cron in wrangler.toml): removes expired facts, with their
 * history, full-text rows and counts (the facts triggers). Loading already skips
 * expired facts, so a late or failed purge only costs storage. Then hashes facts older
 * than text_hash (migration 0028), dropping the copies it finds, indexes facts older than
 * their tenant's word marks (0031) under them, and embeds facts a remote embedder has no
 * vector of (fact-vectors.ts).
 */
export async function scheduledPurge(
  env: Pick<Env, "DB">,
  now = Date.now(),
  /** Holds each tenant's embedder calls against its budgets (the tenant's own: the task runs for no key or thread). */
  holderFor?: (tenant: string) => EmbedHolder,
): Promise<{ purged: number; hashed: number; duplicates: number; marked: number; embedded: number }> {
  const purged = await purgeExpiredFacts(env.DB, now);
  if (purged > 0) log.info("purge", { purged });
  const { hashed, duplicates } = await hashOlderFacts(env.DB);
  if (hashed + duplicates > 0) log.info("fact text hashes", { hashed, duplicates });
  const marked = await markOlderFacts(env.DB);
  if (marked > 0) log.info("facts indexed under their tenant's marks", { marked });
  // A remote facts embedder's vectors for the facts written since, or all of them after a change of embedder.
  const embedded = await embedOlderFacts(env.DB, factsEmbedder(), holderFor);
  if (embedded > 0) log.info("fact vectors", { embedded });
  return { purged, hashed, duplicates, marked, embedded };
}
