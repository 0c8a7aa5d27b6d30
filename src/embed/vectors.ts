/**
 * Stored vectors (docs/concepts/recall-by-meaning.md): unit vectors as int8, and the similarity every dense channel
 * ranks by — cosine once the items' common direction (their mean: a thread's speakers, a scope's
 * subject) is left out of both sides, which otherwise makes every item look alike.
 */

/** A unit vector as int8 bytes (scaled so its largest component is ±127). */
export function quantize(v: Float32Array): Uint8Array {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  const out = new Int8Array(v.length);
  if (max > 0) for (let d = 0; d < v.length; d++) out[d] = Math.round((v[d]! * 127) / max);
  return new Uint8Array(out.buffer);
}

/** The items closest to `query` without their common direction, best first, at most `limit`; [] when the query is all zeros. */
export function nearest<T>(items: readonly { item: T; vec: Int8Array }[], query: Float32Array, limit: number): { item: T; score: number }[] {
  const dims = query.length;
  const usable = items.filter((i) => i.vec.length === dims);
  if (usable.length === 0) return [];
  const mean = new Float64Array(dims);
  const norms = usable.map(({ vec }) => {
    let n = 0;
    for (let d = 0; d < dims; d++) n += vec[d]! * vec[d]!;
    const inv = n > 0 ? 1 / Math.sqrt(n) : 0;
    for (let d = 0; d < dims; d++) mean[d] = mean[d]! + vec[d]! * inv;
    return n;
  });
  const m = Math.hypot(...mean);
  if (m > 0) for (let d = 0; d < dims; d++) mean[d] = mean[d]! / m;
  let qm = 0;
  let qn = 0;
  for (let d = 0; d < dims; d++) {
    qm += query[d]! * mean[d]!;
    qn += query[d]! * query[d]!;
  }
  const rest = qn - qm * qm;
  if (rest <= 1e-9) return [];
  const scored = usable.map(({ item, vec }, i) => {
    let dot = 0;
    let along = 0;
    for (let d = 0; d < dims; d++) {
      dot += query[d]! * vec[d]!;
      along += vec[d]! * mean[d]!;
    }
    const left = norms[i]! - along * along;
    return { item, score: left > 1e-9 ? (dot - qm * along) / Math.sqrt(left * rest) : 0 };
  });
  return scored.sort((a, b) => b.score - a.score).slice(0, limit);
}
