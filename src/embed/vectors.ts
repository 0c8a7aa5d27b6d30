/**
 * Stored vectors (docs/concepts/recall-by-meaning.md): unit vectors as int8, and the similarity every dense channel
 * ranks by — cosine once the items' common direction (their mean: a thread's speakers, a scope's
 * subject) is left out of both sides, which otherwise makes every item look alike.
 */

import { DENSE_FLOOR_RANK } from "./fusion";
import { BACKGROUND_TEXTS } from "./word-table";

/** A unit vector as int8 bytes (scaled so its largest component is ±127). */
export function quantize(v: Float32Array): Uint8Array {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  const out = new Int8Array(v.length);
  if (max > 0) for (let d = 0; d < v.length; d++) out[d] = Math.round((v[d]! * 127) / max);
  return new Uint8Array(out.buffer);
}

/** A set of fewer items than this is too small to have a common direction of its own (a set of one's would be itself). */
const SMALL_SET = 8;

type Vec = ArrayLike<number>;

/**
 * The items closest to `query` without their common direction, best first, at most `limit`; none when the query is all
 * zeros. With the embedder's `background` (word-table.ts backgroundVectors: random text; a remote one's: background-sentences.ts), a set of fewer than SMALL_SET
 * items takes the rest of its common direction from the background (a set of one would otherwise leave out itself and
 * score 0), and answers a `floor` for fuseScores, having no rank 50 of its own: the background's score at that rank
 * (DENSE_FLOOR_RANK) of the table's, or the same share of a smaller one, so text about nothing in particular sets the bar the set cannot.
 */
export function nearest<T>(
  items: readonly { item: T; vec: Int8Array }[],
  query: Float32Array,
  limit: number,
  background?: readonly Float32Array[],
): { hits: { item: T; score: number }[]; floor?: number } {
  const dims = query.length;
  const usable = items.filter((i) => i.vec.length === dims);
  if (usable.length === 0) return { hits: [] };
  const random = background && usable.length < SMALL_SET ? background.filter((v) => v.length === dims) : [];
  const borrowed = random.length > 0 ? (SMALL_SET - usable.length) / random.length : 0;
  const score = similarityTo(query, [...usable.map((u) => ({ vec: u.vec, weight: 1 })), ...random.map((vec) => ({ vec, weight: borrowed }))]);
  if (!score) return { hits: [] };
  const hits = usable
    .map(({ item, vec }) => ({ item, score: score(vec) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
  if (random.length === 0) return { hits };
  const bar = random.map(score).sort((a, b) => b - a);
  // The same share of any background as rank 50 is of the table's (its top fifth): a remote embedder's is smaller.
  return { hits, floor: bar[Math.min(bar.length - 1, Math.round((DENSE_FLOOR_RANK * bar.length) / BACKGROUND_TEXTS))] };
}

/** Cosine with `query` once the common direction of `vecs` (their unit vectors' weighted mean) is left out of both; undefined when the query lies along it. */
function similarityTo(query: Float32Array, vecs: readonly { vec: Vec; weight: number }[]): ((v: Vec) => number) | undefined {
  const dims = query.length;
  const mean = new Float64Array(dims);
  for (const { vec, weight } of vecs) {
    if (weight === 0) continue;
    let n = 0;
    for (let d = 0; d < dims; d++) n += vec[d]! * vec[d]!;
    const inv = n > 0 ? weight / Math.sqrt(n) : 0;
    for (let d = 0; d < dims; d++) mean[d] = mean[d]! + vec[d]! * inv;
  }
  const m = Math.hypot(...mean);
  if (m > 0) for (let d = 0; d < dims; d++) mean[d] = mean[d]! / m;
  let qm = 0;
  let qn = 0;
  for (let d = 0; d < dims; d++) {
    qm += query[d]! * mean[d]!;
    qn += query[d]! * query[d]!;
  }
  const rest = qn - qm * qm;
  if (rest <= 1e-9) return undefined;
  return (vec) => {
    let dot = 0;
    let along = 0;
    let n = 0;
    for (let d = 0; d < dims; d++) {
      dot += query[d]! * vec[d]!;
      along += vec[d]! * mean[d]!;
      n += vec[d]! * vec[d]!;
    }
    const left = n - along * along;
    return left > 1e-9 ? (dot - qm * along) / Math.sqrt(left * rest) : 0;
  };
}
