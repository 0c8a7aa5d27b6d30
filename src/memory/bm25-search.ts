import { quoteTerm } from "../core/search-terms";

/**
 * Fact search's one scorer: Okapi BM25 whose statistics are those of the facts being searched, never
 * the shared index's. facts_fts is one FTS5 table for every tenant, and its bm25() weighs a word by how
 * many rows of the whole table hold it (and normalises length by the whole table's mean), so a key
 * could tell from its own facts' scores whether a word occurs in facts it may not read. Here FTS5 only
 * matches (porter stemming, one MATCH per query term); N, the mean length and each term's document
 * frequency are counted over the live facts of the searched scopes. A fact's term frequency is taken
 * as 1 (facts are a sentence or two; FTS5 does not expose per-row counts to SQL) and its length is its
 * stored token estimate. One statement: no round trip beyond the search's own.
 *
 * The matching is bound to the searched scopes too, not only the scoring: each MATCH runs within the
 * rowid ranges of their spans (consecutive spans merged), which FTS5 seeks to, so other tenants' facts
 * holding the same words are never walked — neither a cost of this search nor a clue in its time.
 */

/**
 * facts_fts.rowid = span * FTS_SPAN + facts.rowid, a span per (tenant, scope) (migrations/0018, which
 * allocates them and holds the same constant): a scope's rows of the shared index are one rowid range.
 */
export const FTS_SPAN = 2 ** 36;

/** Okapi's usual constants; the bench (bench/README.md, LoCoMo) measured them against variants. */
const K1 = 1.2;
const B = 0.75;

/** Numbered parameters (`?N`), one per distinct value: a value used in several places is bound once (D1 allows 100). */
export class Params {
  readonly values: (string | number)[] = [];
  readonly #at = new Map<string | number, number>();
  ref(v: string | number): string {
    let i = this.#at.get(v);
    if (i === undefined) {
      this.values.push(v);
      i = this.values.length;
      this.#at.set(v, i);
    }
    return `?${i}`;
  }
}

/**
 * Which facts a search reads: an SQL predicate over bare `tenant_id` and `scope`, applied to facts and to
 * fact_scope_stats alike, and the marks (tenant-words.ts) of the tenants it can name, under which their words are indexed.
 */
export type Reach = { marks: readonly string[]; where: (p: Params) => string };

export type SearchFilter = { kind?: string; key?: string };

/**
 * A word of at least this many letters also matches, at PREFIX_WEIGHT, the facts holding a word that
 * begins with its first half (at least 4 letters): forms Porter keeps apart ("allergies" / "allergic",
 * "experimentation" / "experimenting") and a misspelt ending ("educaton"). Only where a budget is filled
 * (a ranked layer), never in a search's answer: a half-word is a hint, not a match a caller asked for.
 * Measured on LoCoMo (bench/README.md, "Facts: a word's first half").
 *
 * The half-word is matched in the searched facts' own text (GLOB at a word's start), never as an FTS5
 * prefix query: FTS5 expands a prefix over every term of the shared index that begins with it, other
 * tenants' included, before any rowid range applies, so their words would be this search's work.
 */
const PREFIX_MIN_LETTERS = 6;
const PREFIX_WEIGHT = 0.5;
/**
 * Half-words are matched only in a scope of at most this many live facts: the match reads every
 * live fact of the scope (bench/README.md).
 */
export const PREFIX_MAX_FACTS = 10_000;

/**
 * Each term's whole-word FTS5 MATCH under each searched tenant's mark and, with `prefixes`, each long word's
 * half-word GLOB: [pattern, query word, weight].
 */
function matchLists(
  terms: readonly string[],
  marks: readonly string[],
  prefixes: boolean,
): { whole: [string, number, number][]; halves: [string, number, number][] } {
  const whole: [string, number, number][] = [];
  const halves: [string, number, number][] = [];
  for (const [i, t] of terms.entries()) {
    for (const mark of marks) whole.push([quoteTerm(mark + t), i, 1]);
    // Letters only (searchTerms gives letters and digits, so no GLOB syntax): a year or a number has no forms.
    if (prefixes && t.length >= PREFIX_MIN_LETTERS && /^\p{L}+$/u.test(t)) {
      halves.push([`*[^a-z0-9]${t.slice(0, Math.max(4, Math.ceil(t.length / 2)))}*`, i, PREFIX_WEIGHT]);
    }
  }
  return { whole, halves };
}

/**
 * The live facts within `reach` that match at least one of `terms` (searchTerms: letters and digits,
 * quoted here anyway), with their BM25 `score` (higher is better), best first, at most `limit`.
 * With `prefixes`, a long word's first half matches too, weighed down (matchLists); a fact counts
 * each query word once, by its better match.
 */
export function bm25Statement(
  db: Pick<D1Database, "prepare">,
  columns: string,
  reach: Reach,
  terms: readonly string[],
  limit: number,
  now: number,
  filter: SearchFilter = {},
  prefixes = false,
): D1PreparedStatement {
  const p = new Params();
  const within = `(${reach.where(p)})`;
  const at = p.ref(now);
  // One MATCH per term, the terms a JSON array joined first: D1 allows 5 terms in a compound SELECT, so not a UNION.
  const lists = matchLists(terms, reach.marks, prefixes);
  const each = p.ref(JSON.stringify(lists.whole));
  const where = [
    filter.kind !== undefined ? `AND f.kind = ${p.ref(filter.kind)}` : "",
    filter.key !== undefined ? `AND f.key = ${p.ref(filter.key)}` : "",
  ].join(" ");
  // Expired rows the purge has not reached yet are neither searched nor counted (the stats rows still hold them).
  const sql =
    `WITH stats AS (SELECT MAX(1, n) AS n, MAX(1.0, tokens * 1.0 / MAX(1, n)) AS avgdl FROM (SELECT ` +
    `COALESCE((SELECT SUM(n) FROM fact_scope_stats WHERE ${within}), 0) - COALESCE((SELECT COUNT(*) FROM facts WHERE expires_at <= ${at} AND ${within}), 0) AS n, ` +
    `COALESCE((SELECT SUM(tokens) FROM fact_scope_stats WHERE ${within}), 0) - COALESCE((SELECT SUM(tokens) FROM facts WHERE expires_at <= ${at} AND ${within}), 0) AS tokens)), ` +
    // The searched scopes' rowid ranges: runs of consecutive spans (a tenant's scopes are allocated together), one range each.
    `r AS (SELECT MIN(span) * ${FTS_SPAN} AS lo, (MAX(span) + 1) * ${FTS_SPAN} - 1 AS hi FROM (SELECT span, span - ROW_NUMBER() OVER (ORDER BY span) AS run FROM fact_scope_stats WHERE ${within}) GROUP BY run), ` +
    // FTS5 takes the rowid bounds (integers) into its seek: a MATCH reads only rows inside a range.
    `hits AS (SELECT t.value ->> 1 AS term, t.value ->> 1 AS word, t.value ->> 2 AS w, facts_fts.rowid % ${FTS_SPAN} AS rid FROM json_each(${each}) t CROSS JOIN r CROSS JOIN facts_fts ` +
    "WHERE facts_fts MATCH (t.value ->> 0) AND facts_fts.rowid >= r.lo AND facts_fts.rowid <= r.hi" +
    // Half-words: the searched facts' text, lower-cased (ASCII, as the query words are), a word's start after a non-letter.
    (lists.halves.length === 0
      ? ""
      : ` UNION ALL SELECT ${terms.length} + t.key, t.value ->> 1, t.value ->> 2, f.rowid FROM facts f CROSS JOIN json_each(${p.ref(JSON.stringify(lists.halves))}) t ` +
        `WHERE ${within} AND (' ' || lower(f.text)) GLOB (t.value ->> 0)`) +
    "), " +
    // Materialized: df and s both read m, and inlined into each its MATCHes ran twice.
    `m AS MATERIALIZED (SELECT h.term, h.word, h.w, h.rid, f.tokens FROM hits h JOIN facts f ON f.rowid = h.rid WHERE ${within} AND (f.expires_at IS NULL OR f.expires_at > ${at})), ` +
    "df AS (SELECT term, COUNT(*) AS df FROM m GROUP BY term), " +
    // A query word's weight in a fact: its IDF, or its half-word's down-weighted IDF where only that matched.
    "wd AS (SELECT m.rid, m.tokens, MAX(m.w * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))) AS idf FROM m JOIN df ON df.term = m.term CROSS JOIN stats GROUP BY m.rid, m.word), " +
    `s AS (SELECT wd.rid, SUM(wd.idf * ${K1 + 1} / (1 + ${K1} * (1 - ${B} + ${B} * wd.tokens / stats.avgdl))) AS score ` +
    "FROM wd CROSS JOIN stats GROUP BY wd.rid) " +
    `SELECT ${columns}, s.score AS score FROM s JOIN facts f ON f.rowid = s.rid WHERE 1 ${where} ORDER BY s.score DESC, f.rowid LIMIT ${p.ref(limit)}`;
  return db.prepare(sql).bind(...p.values);
}
