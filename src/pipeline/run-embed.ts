import type { AgentConfig } from "../config/model-config";
import { unembeddedWarning } from "../embed/embedder";
import { EmbedCache } from "../embed/embed-cache";
import { type ChosenEmbedder, embedderNamed, knowFactsEmbedder } from "../embed/embedders";
import { compiled } from "../routing/models.generated";
import type { RankOptions } from "../memory/types";
import type { ThreadStore } from "../thread/thread-store";
import type { RecallAsk } from "../thread/types";
import type { UsageRecord } from "./usage";
import type { TurnIO } from "./turn-io";
import type { SpendGuard } from "./spend-guard";

/** The embedder models.yaml names `name` (absent: the file's `embedder`), with this deployment's bindings and secrets. */
export const embedderOf = (env: object, name: string = compiled.embedder): ChosenEmbedder => embedderNamed(env, name, compiled.embedders);

/** What `tokens` of embedding by a remote embedder cost, as a usage record under its name (cause "embedding"). */
export function embeddingUsage(remote: EmbedCache, tokens: number): UsageRecord | undefined {
  if (tokens === 0) return undefined;
  return {
    model: remote.embedder.name,
    cause: "embedding",
    prompt_tokens: tokens,
    completion_tokens: 0,
    cost: remote.cost(tokens),
    requests: 1,
    estimated_requests: 0,
  };
}

/** One call of a remote embedder, held against `guard`'s budgets (EmbedCache.loadHeld), as its usage record. */
const heldLoad = async (
  remote: EmbedCache,
  texts: readonly string[],
  guard: SpendGuard | undefined,
  withBackground = false,
): Promise<UsageRecord | undefined> => embeddingUsage(remote, await remote.loadHeld(texts, guard, withBackground));

/** The run ranks by words alone, and its reply says why. */
function wordsOnly(rank: RankOptions, warning: string): { rank: RankOptions; warning: string } {
  const words = ["full_text" as const];
  return { rank: { ...rank, channels: words, ...(rank.recall ? { recall: { ...rank.recall, channels: words } } : {}) }, warning };
}

/** This isolate's facts embedder, from the first env it sees (the Worker's requests, queue batches, the thread object). */
export function knowEmbedders(env: object): void {
  knowFactsEmbedder(embedderOf(env));
}

/**
 * Recall by meaning in a run (docs/concepts/recall-by-meaning.md): its turns use the agent's embedder (the file's by
 * default), its facts the file's. A remote embedder's query vector is fetched here, before the
 * recall that reads it (billed as usage, cause "embedding"); when it fails, times out or answers
 * the wrong length, the run ranks by words alone and its reply's warnings say so.
 */
export async function embedForRun(
  deps: { env: object; io: TurnIO; thread?: { log: Pick<ThreadStore, "vectors"> } },
  run: { tenant: string; agent: AgentConfig | undefined; rank: RankOptions; facts: boolean; guard?: SpendGuard },
): Promise<{ rank: RankOptions; warning?: string }> {
  const { tenant, agent, rank } = run;
  const turns = embedderOf(deps.env, agent?.embedder);
  deps.thread?.log.vectors.use(turns.turns);
  if (rank.channels && !rank.channels.includes("dense")) return { rank };
  // Only what this run ranks: its thread's turns (recall on), its scopes' facts.
  const wanted = new Map<ChosenEmbedder, string[]>();
  const want = (chosen: ChosenEmbedder, text: string) => void wanted.set(chosen, [...(wanted.get(chosen) ?? []), text]);
  if (deps.thread && rank.recall !== false) want(turns, rank.recallQuery ?? rank.query ?? "");
  const facts = embedderOf(deps.env);
  if (run.facts) want(facts, rank.query ?? "");
  let embedder = "";
  try {
    for (const [chosen, texts] of wanted) {
      embedder = chosen.name;
      // The facts' embedder brings its background in the same call, the first time (a small scope ranks against it).
      const usage = chosen.remote && (await heldLoad(chosen.remote, texts, run.guard, run.facts && chosen === facts));
      if (usage) deps.io.bill(tenant, usage);
    }
    return { rank };
  } catch (e) {
    const warning = unembeddedWarning(embedder, e);
    if (warning === undefined) throw e;
    return wordsOnly(rank, warning);
  }
}

/**
 * Before a recall outside a run (`POST /v1/memory/context`): the remote embedder in use fetches the query's vector,
 * billed to `bill` and held against `guard`'s budgets. A failure or a budget's refusal is logged and the turns rank
 * by words; the warning that says so (undefined: none).
 */
export async function embedRecallQuery(
  store: Pick<ThreadStore, "vectors">,
  ask: RecallAsk | undefined,
  bill: (u: UsageRecord) => void,
  guard?: SpendGuard,
): Promise<string | undefined> {
  const remote = store.vectors.embedderInUse();
  if (!(remote instanceof EmbedCache) || !ask || ask.channels?.includes("dense") === false) return undefined;
  try {
    const usage = await heldLoad(remote, [ask.query], guard);
    if (usage) bill(usage);
    return undefined;
  } catch (e) {
    const warning = unembeddedWarning(remote.embedder.name, e);
    if (warning === undefined) throw e;
    return warning;
  }
}

/** Messages a remote embedder embeds per call, and calls per run at most (the rest: after later runs). */
const FILL_BATCH = 64;
const FILL_CALLS = 4;

/**
 * After a run's answer: the thread's messages with no vector of the remote embedder in use get one, in bounded
 * batches (all of them, over runs, after a change of embedder), each billed to `bill` and held against `guard`'s
 * budgets. A failure or a budget's refusal stops the work (logged; those messages are recalled by words until a
 * later run fills them); each batch is written in one transaction and only for the texts it embedded, so nothing
 * is half-written. How many it filled.
 */
export async function embedMissing(
  store: Pick<ThreadStore, "vectors">,
  bill: (u: UsageRecord) => void,
  guard?: SpendGuard,
  batch = FILL_BATCH,
  calls = FILL_CALLS,
): Promise<number> {
  const remote = store.vectors.embedderInUse();
  if (!(remote instanceof EmbedCache)) return 0;
  let filled = 0;
  for (let call = 0; call < calls; call++) {
    const texts = store.vectors.missingVectors(batch);
    if (texts.length === 0) break;
    try {
      const usage = await heldLoad(remote, texts, guard);
      if (usage) bill(usage);
    } catch (e) {
      if (unembeddedWarning(remote.embedder.name, e) === undefined) throw e;
      break;
    }
    filled += store.vectors.fillVectors(batch);
    if (texts.length < batch) break;
  }
  return filled;
}
