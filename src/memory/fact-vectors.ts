import { errorText, log } from "../core/log";
import type { EmbedCache } from "../embed/embed-cache";
import { denseOffWarning, EmbedFailure } from "../embed/embedder";
import type { ChosenEmbedder } from "../embed/embedders";
import { quantize } from "../embed/vectors";
import type { RankOptions } from "./types";
import { usageUpsertSql, usageValues } from "../thread/pending-bookkeeping";

/**
 * Fact vectors of a remote embedder (docs/concepts/recall-by-meaning.md): a fact is written without one (no network in a
 * write), and the scheduled task embeds the facts whose vector is missing or another embedder's, in
 * bounded batches, billed to each fact's tenant. Until then a fact is ranked by its words alone.
 */

type Db = Pick<D1Database, "prepare" | "batch">;

/** `tokens` of embedding by `remote`, billed to `tenant` (usage, cause "embedding"). */
function billStatement(db: Db, remote: EmbedCache, tenant: string, tokens: number): D1PreparedStatement {
  const row = {
    tenant_id: tenant,
    day: new Date().toISOString().slice(0, 10),
    model: remote.embedder.name,
    cause: "embedding",
    requests: 1,
    estimated_requests: 0,
    prompt_tokens: tokens,
    completion_tokens: 0,
    cost: remote.cost(tokens),
  };
  return db.prepare(usageUpsertSql("usage")).bind(...usageValues(row));
}

/**
 * The query's vector by a remote embedder, unless held (a run fetched it ahead and billed it): fetched, billed to `tenant`;
 * with the embedder's background the first time (a small scope ranks against it: vectors.ts nearest).
 */
async function fetchQueryVector(db: Db, remote: EmbedCache, tenant: string, query: string): Promise<void> {
  if (remote.embed(query) && remote.background()) return;
  const tokens = await remote.load([query], true);
  if (tokens > 0) await billStatement(db, remote, tenant, tokens).run();
}

/** The query's vector by a remote embedder (fetchQueryVector); undefined when the embedder fails (logged: the facts rank by words). */
export async function remoteQueryVector(db: Db, remote: EmbedCache, tenant: string, query: string): Promise<Float32Array | undefined> {
  try {
    await fetchQueryVector(db, remote, tenant, query);
  } catch (e) {
    log.warn("embedder", { message: errorText(e) });
  }
  return remote.embed(query);
}

/**
 * Before a recall outside a run (`POST /v1/memory/context`), as embedForRun before a run's: the facts embedder's query
 * vector when it is a remote one, fetched ahead and billed. When it fails, the recall runs on words alone (fetching nothing
 * again) and the answer's warnings say so.
 */
export async function embedFactsQuery(db: Db, chosen: ChosenEmbedder, tenant: string, rank: RankOptions): Promise<{ rank: RankOptions; warning?: string }> {
  const query = rank.query ?? "";
  if (!chosen.remote || query.trim() === "" || rank.channels?.includes("dense") === false) return { rank };
  try {
    await fetchQueryVector(db, chosen.remote, tenant, query);
    return { rank };
  } catch (e) {
    if (!(e instanceof EmbedFailure)) throw e;
    log.warn("embedder", { embedder: e.embedder, reason: e.reason, message: e.message });
    return { rank: { ...rank, channels: ["full_text"] }, warning: denseOffWarning(e) };
  }
}

type Unembedded = { r: number; tenant_id: string; text: string };

/**
 * Embeds up to `maxBatches` × `batch` facts whose vector is not `chosen`'s (none for the built-in embedder, whose
 * vectors are made at write and from the text when read). Each batch is one call per tenant, written in one D1 batch
 * with its usage, and only where the text is still the one embedded; the newest first (the likeliest read). A failure
 * stops the work until the next run.
 */
export async function embedOlderFacts(db: Db, chosen: ChosenEmbedder, batch = 64, maxBatches = 8): Promise<number> {
  const remote = chosen.remote;
  if (!remote) return 0;
  let embedded = 0;
  for (let i = 0; i < maxBatches; i++) {
    const { results } = await db
      .prepare("SELECT rowid AS r, tenant_id, text FROM facts WHERE vec_by IS NULL OR vec_by != ? ORDER BY rowid DESC LIMIT ?")
      .bind(remote.id, batch)
      .all<Unembedded>();
    if (results.length === 0) break;
    const tenants = new Map<string, Unembedded[]>();
    for (const row of results) tenants.set(row.tenant_id, [...(tenants.get(row.tenant_id) ?? []), row]);
    const statements: D1PreparedStatement[] = [];
    const usage: D1PreparedStatement[] = [];
    try {
      for (const [tenant, rows] of tenants) {
        const tokens = await remote.load(rows.map((row) => row.text));
        for (const row of rows) {
          const vec = remote.embed(row.text);
          if (!vec) continue;
          statements.push(
            db.prepare("UPDATE facts SET vec = ?, vec_by = ? WHERE rowid = ? AND text = ?").bind(quantize(vec).buffer, remote.id, row.r, row.text),
          );
        }
        if (tokens > 0) usage.push(billStatement(db, remote, tenant, tokens));
      }
    } catch (e) {
      if (!(e instanceof EmbedFailure)) throw e;
      log.warn("embedder", { embedder: e.embedder, reason: e.reason, message: e.message });
      break;
    }
    // One transaction: the vectors and what they cost land together.
    const done = await db.batch([...statements, ...usage]);
    embedded += done.slice(0, statements.length).reduce((n, d) => n + d.meta.changes, 0);
    if (results.length < batch) break;
  }
  return embedded;
}
