import { errorText, log } from "../core/log";
import { isAppError } from "../core/errors";
import type { EmbedCache, EmbedHolder } from "../embed/embed-cache";
import { EmbedFailure, unembeddedWarning } from "../embed/embedder";
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
 * The query's vector by a remote embedder, unless held (a run fetched it ahead and billed it): fetched, held against
 * `holder`'s budgets and billed to `tenant`; with the embedder's background the first time (a small scope ranks against
 * it: vectors.ts nearest).
 */
async function fetchQueryVector(db: Db, remote: EmbedCache, tenant: string, query: string, holder?: EmbedHolder): Promise<void> {
  if (remote.embed(query) && remote.background()) return;
  const tokens = await remote.loadHeld([query], holder, true);
  if (tokens > 0) await billStatement(db, remote, tenant, tokens).run();
}

/** The query's vector by a remote embedder (fetchQueryVector); undefined when the embedder fails or a budget refuses the call (logged: the facts rank by words). */
export async function remoteQueryVector(db: Db, remote: EmbedCache, tenant: string, query: string, holder?: EmbedHolder): Promise<Float32Array | undefined> {
  try {
    await fetchQueryVector(db, remote, tenant, query, holder);
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
export async function embedFactsQuery(
  db: Db,
  chosen: ChosenEmbedder,
  tenant: string,
  rank: RankOptions,
  holder?: EmbedHolder,
): Promise<{ rank: RankOptions; warning?: string }> {
  const query = rank.query ?? "";
  if (!chosen.remote || query.trim() === "" || rank.channels?.includes("dense") === false) return { rank };
  try {
    await fetchQueryVector(db, chosen.remote, tenant, query, holder);
    return { rank };
  } catch (e) {
    const warning = unembeddedWarning(chosen.name, e);
    if (warning === undefined) throw e;
    return { rank: { ...rank, channels: ["full_text"] }, warning };
  }
}

type Unembedded = { r: number; tenant_id: string; text: string };

/**
 * Embeds up to `maxBatches` × `batch` facts whose vector is not `chosen`'s (none for the built-in embedder, whose
 * vectors are made at write and from the text when read). Each batch is one call per tenant, held against that
 * tenant's budgets (`holderFor`), written in one D1 batch with its usage, and only where the text is still the one
 * embedded; the newest first (the likeliest read). A tenant whose budget refuses is left for the next run (its
 * facts rank by words meanwhile); a failure writes what was embedded and stops the work until the next run.
 */
export async function embedOlderFacts(
  db: Db,
  chosen: ChosenEmbedder,
  holderFor?: (tenant: string) => EmbedHolder,
  batch = 64,
  maxBatches = 8,
): Promise<number> {
  const remote = chosen.remote;
  if (!remote) return 0;
  let embedded = 0;
  const refused: string[] = [];
  for (let i = 0; i < maxBatches; i++) {
    const { results } = await db
      .prepare(
        "SELECT rowid AS r, tenant_id, text FROM facts WHERE (vec_by IS NULL OR vec_by != ?) AND tenant_id NOT IN (SELECT value FROM json_each(?)) ORDER BY rowid DESC LIMIT ?",
      )
      .bind(remote.id, JSON.stringify(refused), batch)
      .all<Unembedded>();
    if (results.length === 0) break;
    const tenants = new Map<string, Unembedded[]>();
    for (const row of results) tenants.set(row.tenant_id, [...(tenants.get(row.tenant_id) ?? []), row]);
    const statements: D1PreparedStatement[] = [];
    const usage: D1PreparedStatement[] = [];
    let failed = false;
    for (const [tenant, rows] of tenants) {
      let tokens: number;
      try {
        tokens = await remote.loadHeld(
          rows.map((row) => row.text),
          holderFor?.(tenant),
        );
      } catch (e) {
        if (isAppError(e) && e.code === "BEM-230") {
          log.warn("embedder", { embedder: remote.embedder.name, reason: "budget", message: e.message });
          refused.push(tenant);
          continue;
        }
        if (!(e instanceof EmbedFailure)) throw e;
        log.warn("embedder", { embedder: e.embedder, reason: e.reason, message: e.message });
        failed = true;
        break;
      }
      for (const row of rows) {
        const vec = remote.embed(row.text);
        if (!vec) continue;
        statements.push(db.prepare("UPDATE facts SET vec = ?, vec_by = ? WHERE rowid = ? AND text = ?").bind(quantize(vec).buffer, remote.id, row.r, row.text));
      }
      if (tokens > 0) usage.push(billStatement(db, remote, tenant, tokens));
    }
    // One transaction: the vectors and what they cost land together (a budget charged for a call is billed for it).
    if (statements.length + usage.length > 0) {
      const done = await db.batch([...statements, ...usage]);
      embedded += done.slice(0, statements.length).reduce((n, d) => n + d.meta.changes, 0);
    }
    if (failed || results.length < batch) break;
  }
  return embedded;
}
