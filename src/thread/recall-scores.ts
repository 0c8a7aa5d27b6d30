import { quoteTerm } from "../core/search-terms";
import type { RecallHit, RecallMatch } from "./recall-index";

/**
 * FTS5's bm25(recall_fts) for a recall query, computed here from what FTS5 itself said about
 * each query word earlier, so that a query scores only the rows written since instead of every
 * row holding one of its words (FTS5's cost is per matched row: its BM25 and its length read,
 * ~2 µs each, two thirds of a recall in a turn).
 *
 * FTS5's BM25 of a row (fts5_aux.c) is, over the query's phrases in order,
 *   Σ idf(p) · f(p) · (k1 + 1) / (f(p) + k1 · (1 − b + b · D / avgdl)),   idf(p) = ln((N − n(p) + 0.5) / (n(p) + 0.5)) (1e-6 if ≤ 0),
 * with N and the token total behind avgdl from its averages record, D the row's length (its
 * docsize record) and f(p) the row's count of the phrase. Only f and n need the text's tokens;
 * both are learnt from FTS5: a word's rows and their single-phrase bm25(), whose one term, with
 * N, n, D and avgdl known, gives f — kept only when the formula here gives back FTS5's value to
 * the last bit, else the query goes to FTS5 (null). Appends only add rows above every other
 * (a new row's position is the highest + 1), so what was learnt stays true up to the newest row
 * it covered and each query asks FTS5 only about the rows above that, in one statement; any
 * other write (replace, remove, remove_all, fork, a rollback) clears it (ThreadStore, as RecallRows).
 */

const K1 = 1.2;
const B = 0.75;
/** Words' rows kept, and words: past either, it starts over (typed arrays: ~5 bytes a row, nothing for the collector to trace). */
const MAX_ENTRIES = 262_144;
const MAX_WORDS = 4096;
/** Threads up to this many rows (positions) are scored here: a word's rows are read once, all of them. */
export const LEARNT_ROWS = 4096;

/** FTS5's varints (fts5_varint.c: SQLite's, big-endian 7 bits per byte, the 9th byte whole), from hex. */
function varints(hex: string): number[] {
  const out: number[] = [];
  let v = 0;
  let n = 0;
  for (let i = 0; i < hex.length; i += 2) {
    const byte = Number.parseInt(hex.slice(i, i + 2), 16);
    if (n === 8) {
      out.push(v * 256 + byte);
      v = 0;
      n = 0;
      continue;
    }
    v = v * 128 + (byte & 0x7f);
    n++;
    if (byte < 0x80) {
      out.push(v);
      v = 0;
      n = 0;
    }
  }
  return out;
}

const idfOf = (rows: number, hits: number): number => {
  const idf = Math.log((rows - hits + 0.5) / (hits + 0.5));
  return idf <= 0 ? 1e-6 : idf;
};

/** One phrase's term of a row's score, as fts5Bm25Function computes it. */
const termOf = (idf: number, f: number, d: number, avgdl: number): number => idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + (B * d) / avgdl)));

type Row = { k: string | number; seq: number; x: number | string | null };

/** One word's rows, ascending (appends only add higher ones), and its count in each; every row up to `upTo`. */
type Word = { seqs: Int32Array; counts: Uint8Array; n: number; upTo: number };

/** `w` with `add` (ascending, all above its rows) appended. */
function grown(w: Word | undefined, add: readonly [number, number][], upTo: number): Word {
  const n = (w?.n ?? 0) + add.length;
  let seqs = w?.seqs ?? new Int32Array(Math.max(4, n));
  let counts = w?.counts ?? new Uint8Array(seqs.length);
  if (n > seqs.length) {
    const size = Math.max(n, 2 * seqs.length);
    seqs = new Int32Array(size);
    counts = new Uint8Array(size);
    seqs.set(w!.seqs.subarray(0, w!.n));
    counts.set(w!.counts.subarray(0, w!.n));
  }
  add.forEach(([seq, f], k) => {
    seqs[(w?.n ?? 0) + k] = seq;
    counts[(w?.n ?? 0) + k] = f;
  });
  return { seqs, counts, n, upTo };
}

export class RecallScores {
  private readonly words = new Map<string, Word>();
  /** Each indexed row's length in tokens, by position, for every row up to `upTo`. */
  private lengths = new Int32Array(0);
  private upTo = 0;
  private entries = 0;
  /** Each position's score and whether it holds a rare word, for one query at a time (kept: no allocation per query). */
  private sums = new Float64Array(0);
  private candidates = new Uint8Array(0);

  clear(): void {
    this.words.clear();
    this.lengths = new Int32Array(0);
    this.upTo = 0;
    this.entries = 0;
  }

  /**
   * The rows older than `beforeSeq` best matching `m`, best first, at most `limit` — the same
   * rows, order and scores as searchRecall — or null when FTS5 must answer (a count that does
   * not give FTS5's value back, a thread past LEARNT_ROWS).
   */
  search(sql: SqlStorage, m: RecallMatch, beforeSeq: number, limit: number): RecallHit[] | null {
    const phrases = [...m.words.rare, ...m.words.common];
    if (this.entries > MAX_ENTRIES || this.words.size > MAX_WORDS) this.clear();
    // One statement: the averages record, the lengths of rows above upTo, and each word's rows above its own upTo (all for a word not learnt yet).
    const asked = JSON.stringify(phrases.map((w, i) => [i, quoteTerm(w), this.words.get(w)?.upTo ?? 0]));
    const rows = sql
      .exec<Row>(
        `SELECT 'a' AS k, 0 AS seq, hex(block) AS x FROM recall_fts_data WHERE id = 1 ` +
          `UNION ALL SELECT 'd', id, hex(sz) FROM recall_fts_docsize WHERE id > ? ` +
          `UNION ALL SELECT w.value->>0, recall_fts.rowid, bm25(recall_fts) FROM json_each(?) AS w, recall_fts ` +
          `WHERE recall_fts MATCH w.value->>1 AND recall_fts.rowid > w.value->>2`,
        this.upTo,
        asked,
      )
      .toArray();
    let totals: number[] = [];
    const sizes: [number, number][] = [];
    const found = phrases.map(() => [] as { seq: number; bm: number }[]);
    for (const r of rows) {
      if (r.k === "a") totals = varints(String(r.x));
      else if (r.k === "d") sizes.push([r.seq, varints(String(r.x))[0] ?? 0]);
      else found[Number(r.k)]!.push({ seq: r.seq, bm: Number(r.x) });
    }
    const top = sizes.reduce((t, [seq]) => Math.max(t, seq), this.upTo);
    if (top > LEARNT_ROWS) return null;
    if (top >= this.lengths.length) {
      const wider = new Int32Array(Math.max(top + 1, 2 * this.lengths.length));
      wider.set(this.lengths);
      this.lengths = wider;
    }
    for (const [seq, d] of sizes) this.lengths[seq] = d;
    const n = totals[0] ?? 0;
    if (n <= 0) return [];
    const avgdl = (totals[1] ?? 0) / n;
    // Each word's new rows' counts, from their single-phrase scores; nothing is kept unless every one reproduces FTS5's value.
    const learnt: [number, number][][] = [];
    for (const [i, w] of phrases.entries()) {
      const fresh = found[i]!.sort((a, b) => a.seq - b.seq);
      const idf = idfOf(n, (this.words.get(w)?.n ?? 0) + fresh.length);
      const got: [number, number][] = [];
      for (const { seq, bm } of fresh) {
        const d = this.lengths[seq]!;
        const f = Math.round((-bm * K1 * (1 - B + (B * d) / avgdl)) / (idf * (K1 + 1.0) + bm));
        if (!(f >= 1 && f <= 255) || termOf(idf, f, d, avgdl) !== -bm) return null;
        got.push([seq, f]);
      }
      learnt.push(got);
    }
    // What was read now covers every row up to the newest one indexed.
    const words = phrases.map((w, i) => {
      const word = grown(this.words.get(w), learnt[i]!, top);
      this.entries += learnt[i]!.length;
      this.words.set(w, word);
      return word;
    });
    this.upTo = top;
    // Each candidate's score summed word by word in the query's phrase order (as FTS5 sums them); the candidates are the rows holding a rare word.
    if (this.sums.length < beforeSeq) {
      this.sums = new Float64Array(beforeSeq);
      this.candidates = new Uint8Array(beforeSeq);
    }
    const sum = this.sums.fill(0, 0, beforeSeq);
    const candidate = this.candidates.fill(0, 0, beforeSeq);
    for (const [j, word] of words.entries()) {
      const idf = idfOf(n, word.n);
      for (let k = 0; k < word.n && word.seqs[k]! < beforeSeq; k++) {
        const seq = word.seqs[k]!;
        sum[seq] = sum[seq]! + termOf(idf, word.counts[k]!, this.lengths[seq]!, avgdl);
        if (j < m.words.rare.length) candidate[seq] = 1;
      }
    }
    // Best first, the newer of equal scores first (searchRecall's order: bm25() = −score ascending, then seq descending), over positions: no object per candidate.
    const order: number[] = [];
    for (let seq = 0; seq < beforeSeq; seq++) if (candidate[seq]) order.push(seq);
    order.sort((a, b) => sum[b]! - sum[a]! || b - a);
    if (order.length > limit) order.length = limit;
    return order.map((seq) => ({ seq, score: sum[seq]! }));
  }
}
