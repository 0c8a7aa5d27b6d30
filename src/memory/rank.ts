import { type Channel, DENSE_WEIGHT, fuseScores } from "../embed/fusion";
import { type Fact, FactRoom } from "./facts";
import { emptyLayer, type FactWhy, type LayerLoad, type LoadedFact, type RankOptions } from "./types";

export type ScoredFact = Fact & { score: number };
type After = { created_at: number; id: string };
type Before = { updated_at: number; id: string };

/** What ranking reads from one scope; D1 implements it (d1-facts-backend.ts). */
export type FactSource = {
  /** The first rows of every stage in one round trip. */
  firstRows(req: {
    kinds: readonly string[];
    query: string;
    limit: number;
    relevantLimit: number;
    recentLimit: number;
    channels: readonly Channel[];
  }): Promise<{
    always: Fact[];
    relevant: ScoredFact[];
    /** The facts closest in meaning to the query, best first (empty without a dense channel). */
    near: ScoredFact[];
    /** A small set's floor for the dense scores (vectors.ts nearest), when the embedder gives one. */
    floor?: number;
    recent: Fact[];
  }>;
  /** Further always-kind rows in creation order, after a position. */
  ofKinds(kinds: readonly string[], limit: number, after: After): Promise<Fact[]>;
  /** Further rows newest first (by last write), before a position. */
  recent(limit: number, before: Before): Promise<Fact[]>;
};

/** The smallest a fact's line can cost (`"x"` and its newline): less room than this holds nothing. */
const MIN_FACT_TOKENS = 1;
/**
 * At most this many ranked matches per load. Room for about 170 facts of LoCoMo's size at 4,000
 * tokens: at 128 the relevant stage ran dry there and recency filled the rest (bench/README.md).
 */
const MAX_RELEVANT = 256;
const MAX_PAGE = 512;
/** Facts examined but left out, reported as "didn't fit"; the rest are only counted. */
export const MAX_SKIPPED_REPORTED = 16;

/**
 * A scope whose `live` facts (`tokens` in all) exceed `room`: always-kinds first (creation
 * order, stopping at the first that does not fit — they are rules in order), then the facts
 * most relevant to the query (each that fits; a smaller, less relevant one may still fit after
 * a big one), then the most recently written (stopping at the first that does not fit).
 * Every stage reads about what the room can hold (sized by the scope's mean fact size), all
 * in one round trip, so the cost is O(kept) whatever the scope's size.
 */
export async function rankedLayer(src: FactSource, room: number, opts: RankOptions, live: { n: number; tokens: number }): Promise<LayerLoad> {
  const out = emptyLayer();
  const skipped = new Map<string, Fact>();
  const taken = new Set<string>();
  // Each kind's header (facts.ts) is charged with the first fact of that kind.
  const left = new FactRoom(room);
  const take = (f: Fact, why: FactWhy): boolean => {
    if (taken.has(f.id)) return true;
    if (!left.take(f)) {
      // A relevant fact that did not fit is met again as a recent one: it is reported once.
      if (skipped.size < MAX_SKIPPED_REPORTED) skipped.set(f.id, f);
      return false;
    }
    out.facts.push({ ...f, why } satisfies LoadedFact);
    taken.add(f.id);
    return true;
  };
  const mean = live.n > 0 ? Math.max(MIN_FACT_TOKENS, live.tokens / live.n) : MIN_FACT_TOKENS;
  // Half again what the room holds at the mean size: most loads need no second page.
  const limit = Math.min(MAX_PAGE, Math.ceil((room / mean) * 1.5) + 4);
  const kinds = [...new Set(opts.alwaysKinds ?? [])];
  const query = opts.query?.trim() ?? "";
  const relevantLimit = Math.min(MAX_RELEVANT, limit);
  const channels = opts.channels ?? ["full_text", "dense"];
  const first = await src.firstRows({ kinds, query, limit, relevantLimit, recentLimit: limit, channels });

  let rows = first.always;
  always: while (kinds.length > 0) {
    let after: After | undefined;
    for (const f of rows) {
      if (!take(f, { reason: "always" })) break always;
      after = f;
    }
    if (rows.length < limit || left.left < MIN_FACT_TOKENS || !after) break;
    rows = await src.ofKinds(kinds, limit, after);
  }

  // Words and meaning fused as for turns (fusion.ts); by words alone where there is no dense channel.
  const byId = new Map([...first.relevant, ...first.near].map((f) => [f.id, f]));
  const fused =
    first.near.length > 0
      ? fuseScores(
          first.relevant.map((f) => ({ key: f.id, score: f.score })),
          first.near.map((f) => ({ key: f.id, score: f.score })),
          DENSE_WEIGHT,
          first.floor,
        )
      : first.relevant.map((f) => ({ key: f.id, score: f.score, channels: undefined }));
  for (const { key, score, channels } of fused) {
    if (left.left < MIN_FACT_TOKENS) break;
    const { score: _own, ...f } = byId.get(key)!;
    take(f, { reason: "relevant", score: Math.round(score * 1e6) / 1e6, ...(channels ? { channels } : {}) });
  }

  let recent = first.recent;
  let recentLimit = limit;
  newest: while (left.left >= MIN_FACT_TOKENS) {
    let before: Before | undefined;
    for (const f of recent) {
      if (!take(f, { reason: "recent" })) break newest;
      before = f;
    }
    if (recent.length < recentLimit || !before) break;
    recentLimit = MAX_PAGE;
    recent = await src.recent(recentLimit, before);
  }

  out.factsDropped = Math.max(0, live.n - out.facts.length);
  out.skipped = [...skipped.values()];
  return out;
}
