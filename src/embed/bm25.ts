import { searchTerms, WORD } from "../core/search-terms";

/**
 * Okapi BM25 over a set of texts held in memory, with the statistics of that set alone: for
 * rankings that read their candidates anyway (the LangGraph store's search by `query`), so no word
 * of another tenant's rows ever weighs in. Words as searchTerms splits them, no stemming.
 */
const K1 = 1.2;
const B = 0.75;

const words = (text: string): string[] => text.normalize("NFKC").toLowerCase().match(WORD) ?? [];

/** Each text's BM25 for the query (0 when it holds none of its words), in the texts' order. */
export function bm25Scores(query: string, texts: readonly string[]): number[] {
  const terms = searchTerms(query);
  if (terms.length === 0 || texts.length === 0) return texts.map(() => 0);
  const wanted = new Set(terms);
  const counts = texts.map((t) => {
    const ws = words(t);
    const tf = new Map<string, number>();
    for (const w of ws) if (wanted.has(w)) tf.set(w, (tf.get(w) ?? 0) + 1);
    return { length: ws.length, tf };
  });
  const n = texts.length;
  const avgdl = Math.max(1, counts.reduce((s, c) => s + c.length, 0) / n);
  const idf = new Map<string, number>();
  for (const t of terms) {
    const df = counts.filter((c) => c.tf.has(t)).length;
    idf.set(t, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
  }
  return counts.map(({ length, tf }) => {
    let score = 0;
    for (const [t, f] of tf) score += (idf.get(t)! * f * (K1 + 1)) / (f + K1 * (1 - B + (B * length) / avgdl));
    return score;
  });
}
