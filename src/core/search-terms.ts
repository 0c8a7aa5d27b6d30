/**
 * Full-text queries (SQLite FTS5: facts_fts in D1, recall_fts in each thread object). User text never
 * reaches FTS5's query syntax: it is split into word tokens here and every token is
 * quoted, so characters like `"`, `*`, `:`, `(`, `NEAR`, `AND` are plain words or
 * nothing — never an SQL error.
 */

/** Words that match almost every fact and only dilute BM25. */
const STOPWORDS = new Set(
  (
    "a an and are as at be but by can could did do does for from had has have he her him his how i if in into is it its " +
    "me my no not of on or our she so than that the their them then there these they this to us was we were what when " +
    "where which who why will with would you your"
  ).split(" "),
);

/**
 * A word: a run of letters, digits, private-use characters and marks, the characters FTS5 indexes as words
 * (tokenizer categories 'L* N* Co M*'). Marks are in: Devanagari's and Tamil's vowel signs and viramas are
 * inside a word (हिन्दी), not between words.
 */
export const WORD = /[\p{L}\p{N}\p{Co}\p{M}]+/gu;

/** The tokenizer of facts_fts and recall_fts as an SQL string: Porter over those words, Latin diacritics folded. */
export const FTS_TOKENIZE = "'porter unicode61 remove_diacritics 2 categories ''L* N* Co M*'''";

/** At most this many terms per query (a long input would otherwise OR hundreds of words). */
export const MAX_TERMS = 24;
const MAX_TERM_CHARS = 64;

/** The distinct search words of a text (WORD), lower-cased, stopwords and 1-character words dropped. */
export function searchTerms(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.normalize("NFKC").toLowerCase().matchAll(WORD)) {
    const w = m[0].slice(0, MAX_TERM_CHARS);
    if (w.length < 2 || STOPWORDS.has(w)) continue;
    out.add(w);
    if (out.size >= MAX_TERMS) break;
  }
  return [...out];
}

/** One term as an FTS5 string (a phrase of its tokens): never query syntax. */
export const quoteTerm = (term: string): string => `"${term.replaceAll('"', '""')}"`;

/**
 * An FTS5 MATCH expression matching at least one of `terms`; null when there is nothing to search for.
 * Terms come from searchTerms (words only) and are quoted anyway.
 */
export function matchExpression(terms: readonly string[]): string | null {
  return terms.length === 0 ? null : terms.map(quoteTerm).join(" OR ");
}
