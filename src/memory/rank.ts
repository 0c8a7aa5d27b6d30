import type { Fact } from "./facts";
import { emptyLayer, type FactWhy, type LayerLoad, type LoadedFact } from "./types";

/** How to choose among a scope's facts when they do not all fit. */
export type RankOptions = {
  /** The current input: facts sharing its words rank first (BM25). */
  query?: string;
  /** Kinds the agent marks `always`: loaded before anything else, in creation order. */
  alwaysKinds?: readonly string[];
};

/** What ranking reads from one scope; D1 implements it (d1-facts-backend.ts). */
export type FactSource = {
  /** Live facts in the scope (an O(1) counter). */
  count(): Promise<number>;
  ofKinds(kinds: readonly string[], limit: number, after?: { created_at: number; id: string }): Promise<Fact[]>;
  /** Best matches first, score higher = more relevant. */
  relevant(query: string, limit: number): Promise<(Fact & { score: number })[]>;
  /** Newest first (by last write), before the given position. */
  recent(limit: number, before?: { updated_at: number; id: string }): Promise<Fact[]>;
};

/** The smallest a fact's system message can be (4 tokens framing + `[k s] t`); bounds how many can fit. */
const MIN_FACT_TOKENS = 6;
const MAX_RELEVANT = 128;
/** Facts examined but left out, reported as "didn't fit"; the rest are only counted. */
export const MAX_SKIPPED_REPORTED = 16;

/**
 * A scope whose facts exceed `room`: always-kinds first (creation order, stopping at the
 * first that does not fit — they are rules in order), then the facts most relevant to the
 * query (each that fits; a smaller, less relevant one may still fit after a big one), then
 * the most recently written (stopping at the first that does not fit). Reads are bounded
 * by what the room can hold, so the cost is O(kept), whatever the scope's size.
 */
export async function rankedLayer(src: FactSource, room: number, opts: RankOptions): Promise<LayerLoad> {
  const out = emptyLayer();
  const skipped: Fact[] = [];
  const taken = new Set<string>();
  const counting = src.count();
  counting.catch(() => undefined); // awaited below; a failing stage must not leave it unhandled
  const take = (f: Fact, why: FactWhy): boolean => {
    if (taken.has(f.id)) return true;
    if (f.tokens > room) {
      if (skipped.length < MAX_SKIPPED_REPORTED) skipped.push(f);
      return false;
    }
    out.facts.push({ ...f, why } satisfies LoadedFact);
    taken.add(f.id);
    room -= f.tokens;
    return true;
  };
  const fitMost = () => Math.max(1, Math.ceil(room / MIN_FACT_TOKENS));

  const kinds = [...new Set(opts.alwaysKinds ?? [])];
  if (kinds.length > 0) {
    let after: { created_at: number; id: string } | undefined;
    always: for (;;) {
      const limit = Math.min(MAX_RELEVANT, fitMost());
      const rows = await src.ofKinds(kinds, limit, after);
      for (const f of rows) {
        if (!take(f, { reason: "always" })) break always;
        after = f;
      }
      if (rows.length < limit || room < MIN_FACT_TOKENS) break;
    }
  }

  const query = opts.query?.trim();
  if (query && room >= MIN_FACT_TOKENS) {
    for (const f of await src.relevant(query, Math.min(MAX_RELEVANT, fitMost()))) {
      take(f, { reason: "relevant", score: f.score });
      if (room < MIN_FACT_TOKENS) break;
    }
  }

  let before: { updated_at: number; id: string } | undefined;
  recent: while (room >= MIN_FACT_TOKENS) {
    // Already-taken facts come back here too, so a page is the room's worth plus those.
    const limit = Math.min(512, fitMost() + taken.size);
    const rows = await src.recent(limit, before);
    for (const f of rows) {
      if (!take(f, { reason: "recent" })) break recent;
      before = f;
    }
    if (rows.length < limit) break;
  }

  out.factsDropped = Math.max(0, (await counting) - out.facts.length);
  out.skipped = skipped;
  return out;
}
