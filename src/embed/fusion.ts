/**
 * Fusion of ranked channels (docs/concepts/recall-by-meaning.md): full-text and dense rankings of the same items
 * merged by weighted reciprocal rank, Σ weight / (k + rank). Ranks, not scores: BM25 and cosine
 * are on scales that do not compare, and a rank fusion needs no calibration per thread or scope.
 */
export const FUSION_K = 60;

/** Weight of the dense channel against full-text in fuseScores (docs/concepts/recall-by-meaning.md: measured on the LoCoMo bench). */
export const DENSE_WEIGHT = 0.4;

export type Channel = "full_text" | "dense";
/** An item's place in each channel that found it: its rank there (1 = best) and that channel's own score. */
export type Channels = Partial<Record<Channel, { rank: number; score: number }>>;
export type Ranked<K> = { key: K; score: number };
export type Fused<K> = { key: K; score: number; channels: Channels };

/** The channels' lists (each best first) as one, best first; ties keep the earlier channel's order. */
export function fuseRanks<K>(lists: readonly { channel: Channel; hits: readonly Ranked<K>[]; weight: number }[], k = FUSION_K): Fused<K>[] {
  const out = new Map<K, Fused<K>>();
  for (const { channel, hits, weight } of lists) {
    for (const [i, h] of hits.entries()) {
      let f = out.get(h.key);
      if (!f) out.set(h.key, (f = { key: h.key, score: 0, channels: {} }));
      f.score += weight / (k + i + 1);
      f.channels[channel] = { rank: i + 1, score: round(h.score) };
    }
  }
  return [...out.values()].sort((a, b) => b.score - a.score);
}

/** The dense score counted from the one at this rank of its list (the rest add nothing): measured on the LoCoMo bench (docs/concepts/recall-by-meaning.md). */
export const DENSE_FLOOR_RANK = 50;
/** And from this similarity at least: below it nothing is close in meaning (0.2 cost nothing on LoCoMo; 0.3 cost 3 points). */
export const DENSE_MIN_SCORE = 0.2;

/**
 * Full-text scores over their best plus `weight` × dense scores above a floor (the one at
 * DENSE_FLOOR_RANK of its list, or its last; a small set's `smallSetFloor` when the embedder gives one,
 * vectors.ts nearest) over the best's margin: each channel in [0, 1],
 * its strength kept (a full-text match far ahead stays ahead; a near-tie in meaning adds little).
 * Measured against reciprocal-rank fusion on the LoCoMo bench, where it kept more of full-text's
 * ranking (docs/concepts/recall-by-meaning.md).
 */
export function fuseScores<K>(fullText: readonly Ranked<K>[], dense: readonly Ranked<K>[], weight: number, smallSetFloor?: number): Fused<K>[] {
  const out = new Map<K, Fused<K>>();
  const top = fullText[0]?.score ?? 0;
  for (const [i, h] of fullText.entries()) {
    out.set(h.key, { key: h.key, score: top > 0 ? h.score / top : 0, channels: { full_text: { rank: i + 1, score: round(h.score) } } });
  }
  const best = dense[0]?.score ?? 0;
  const own = dense[Math.min(DENSE_FLOOR_RANK, dense.length - 1)]?.score ?? 0;
  const floor = Math.max(DENSE_MIN_SCORE, smallSetFloor ?? own);
  for (const [i, h] of dense.entries()) {
    const add = best > floor ? (weight * Math.max(0, h.score - floor)) / (best - floor) : 0;
    let f = out.get(h.key);
    if (!f) {
      if (add <= 0) continue;
      out.set(h.key, (f = { key: h.key, score: 0, channels: {} }));
    }
    f.score += add;
    f.channels.dense = { rank: i + 1, score: round(h.score) };
  }
  return [...out.values()].sort((a, b) => b.score - a.score);
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;
