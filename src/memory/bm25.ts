import { words } from "./fts";

/**
 * Okapi BM25 (k1 1.2, b 0.75, FTS5's idf) computed here over a bounded window of candidate facts,
 * with the statistics of the searched scopes only: `n` facts, their `tokens`, and per query term
 * `df` = how many of those facts contain it (counted up to a cap by the caller). FTS5's bm25()
 * would count every posting of every query phrase — the scope tag's postings are the whole scope —
 * and its statistics would include other tenants' facts.
 */
const K1 = 1.2;
const B = 0.75;

export type ScopeStats = { n: number; tokens: number; df: readonly number[] };

export function bm25(terms: readonly string[], doc: { text: string; tokens: number }, stats: ScopeStats): number {
  const tf = new Map<string, number>();
  for (const w of words(doc.text)) tf.set(w, (tf.get(w) ?? 0) + 1);
  const n = Math.max(1, stats.n);
  const avg = stats.tokens > 0 ? stats.tokens / n : Math.max(1, doc.tokens);
  const norm = K1 * (1 - B + (B * doc.tokens) / avg);
  let score = 0;
  for (const [i, term] of terms.entries()) {
    const f = tf.get(term) ?? 0;
    if (f === 0) continue;
    const df = Math.min(n, Math.max(1, stats.df[i] ?? 1));
    const idf = Math.max(1e-6, Math.log((n - df + 0.5) / (df + 0.5)));
    score += (idf * f * (K1 + 1)) / (f + norm);
  }
  return Math.round(score * 1e6) / 1e6;
}
