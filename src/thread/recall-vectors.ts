import { INDEXED_ROLES, messageText } from "./recall-index";
import type { RecallHit } from "./recall-index";
import type { TurnEmbedder } from "../embed/embedder";
import { quantize } from "../embed/vectors";

/**
 * The dense channel of turn recall (docs/concepts/recall-by-meaning.md): one vector per live user and assistant
 * message, in `recall_vectors` beside the full-text index and kept in step with it the same way
 * (v14): triggers on `messages` null a row's vector when its text changes and drop it with its
 * message (replace, remove, remove_all, fork, any repair), and waiting messages get their row
 * when they join the index (recall-index.ts indexWaiting). A null vector is filled by `fill`,
 * after a run's answer or before a recall reads vectors, never inside the save an answer waits
 * for. `recall_vectors_by` names the embedder of every vector present: another embedder nulls
 * them all (they are filled again, and two embedders' vectors are never compared).
 *
 * In memory the object keeps the vectors as int8 rows for a brute-force cosine per recall.
 * The score leaves out the thread's common direction (the mean of its vectors: its speakers'
 * names, its register), which otherwise makes every turn look alike (SIF's "common component").
 */
export const RECALL_VECTORS_DDL: readonly string[] = [
  `CREATE TABLE recall_vectors (seq INTEGER PRIMARY KEY, vec BLOB)`,
  `CREATE INDEX recall_vectors_missing ON recall_vectors (seq) WHERE vec IS NULL`,
  `CREATE TABLE recall_vectors_by (embedder TEXT NOT NULL)`,
  `INSERT INTO recall_vectors_by (embedder) VALUES ('')`,
  `CREATE TRIGGER messages_vectors_insert AFTER INSERT ON messages
     WHEN new.role IN ${INDEXED_ROLES} AND new.seq <= (SELECT through FROM recall_indexed) BEGIN
     INSERT OR REPLACE INTO recall_vectors (seq, vec) VALUES (new.seq, NULL);
   END`,
  `CREATE TRIGGER messages_vectors_delete AFTER DELETE ON messages BEGIN
     DELETE FROM recall_vectors WHERE seq = old.seq;
   END`,
  `CREATE TRIGGER messages_vectors_update AFTER UPDATE OF json, role ON messages BEGIN
     DELETE FROM recall_vectors WHERE seq = old.seq;
     INSERT INTO recall_vectors (seq, vec) SELECT new.seq, NULL WHERE new.role IN ${INDEXED_ROLES} AND new.seq <= (SELECT through FROM recall_indexed);
   END`,
  `INSERT INTO recall_vectors (seq, vec) SELECT seq, NULL FROM messages WHERE role IN ${INDEXED_ROLES} AND seq <= (SELECT through FROM recall_indexed)`,
];

/**
 * Rocchio's pseudo-relevance feedback: the query's vector plus FEEDBACK_WEIGHT × the mean of the best FEEDBACK_HITS
 * full-text hits' unit vectors, so a turn saying what the best word matches say, in other words, ranks by meaning too.
 * Textbook values (a handful of hits, half weight), measured on LoCoMo (docs/concepts/recall-by-meaning.md), not fitted.
 */
const FEEDBACK_HITS = 5;
const FEEDBACK_WEIGHT = 0.5;

/** Vectors filled in one call at most (an old thread's first recall embeds this many, the rest on later calls). */
const FILL_ROWS = 8192;
/** The common direction is computed again once the vectors grew by this share since. */
const MEAN_DRIFT = 1 / 8;

export class RecallVectors {
  private seqs = new Int32Array(0);
  private data = new Int8Array(0);
  /** Per row: its squared length and its dot with the common direction. */
  private norm2 = new Float32Array(0);
  private along = new Float32Array(0);
  private count = 0;
  private upTo = 0;
  private readonly sum: Float64Array;
  private readonly mean: Float32Array;
  private meanCount = 0;
  /** Scores of one search, kept between calls (no allocation per recall). */
  private scores = new Float32Array(0);

  constructor(private readonly dims: number) {
    this.sum = new Float64Array(dims);
    this.mean = new Float32Array(dims);
  }

  clear(): void {
    this.count = 0;
    this.upTo = 0;
    this.sum.fill(0);
    this.meanCount = 0;
  }

  /**
   * Embeds the rows whose vector is missing (at most `limit`): how many it filled, and whether any may still be missing
   * (the limit reached, or a row it could not embed). The caller runs it in a transaction.
   */
  fill(sql: SqlStorage, embedder: TurnEmbedder, limit = FILL_ROWS): { filled: number; left: boolean } {
    const by = sql.exec<{ embedder: string }>(`SELECT embedder FROM recall_vectors_by`).one().embedder;
    if (by !== embedder.id) {
      sql.exec(`UPDATE recall_vectors SET vec = NULL WHERE vec IS NOT NULL`);
      sql.exec(`UPDATE recall_vectors_by SET embedder = ?`, embedder.id);
      this.clear();
    }
    const rows = sql
      .exec<{ seq: number; text: string | null }>(
        `SELECT v.seq AS seq, ${messageText("m.json")} AS text FROM recall_vectors v JOIN messages m ON m.seq = v.seq WHERE v.vec IS NULL ORDER BY v.seq LIMIT ?`,
        limit,
      )
      .toArray();
    let filled = 0;
    for (const r of rows) {
      const v = embedder.embed(r.text ?? "");
      // Not ready (the table), or not fetched (a remote one's: its text changed since, or another batch has it).
      if (!v) {
        if (embedder.remote) continue;
        break;
      }
      sql.exec(`UPDATE recall_vectors SET vec = ? WHERE seq = ?`, quantize(v), r.seq);
      // A row below what memory holds (a vector filled late): memory reads them all again.
      if (r.seq <= this.upTo) this.clear();
      filled++;
    }
    return { filled, left: rows.length === limit || filled < rows.length };
  }

  /** Whether the stored vectors are this embedder's (a remote one's recall reads none before its background work switched them). */
  static current(sql: SqlStorage, embedder: TurnEmbedder): boolean {
    return sql.exec<{ embedder: string }>(`SELECT embedder FROM recall_vectors_by`).one().embedder === embedder.id;
  }

  /** Texts of up to `limit` messages whose vector is missing, oldest first (all of them after a change of embedder). */
  static missing(sql: SqlStorage, embedder: TurnEmbedder, limit: number): string[] {
    const where = RecallVectors.current(sql, embedder) ? "WHERE v.vec IS NULL" : "";
    return sql
      .exec<{ text: string | null }>(
        `SELECT ${messageText("m.json")} AS text FROM recall_vectors v JOIN messages m ON m.seq = v.seq ${where} ORDER BY v.seq LIMIT ?`,
        limit,
      )
      .toArray()
      .map((r) => r.text ?? "");
  }

  /** Reads the vectors above what memory holds (all of them at first, and after clear). */
  private load(sql: SqlStorage): void {
    const dims = this.dims;
    const rows = sql
      .exec<{ seq: number; vec: ArrayBuffer }>(`SELECT seq, vec FROM recall_vectors WHERE vec IS NOT NULL AND seq > ? ORDER BY seq`, this.upTo)
      .toArray();
    if (rows.length === 0) return;
    const need = this.count + rows.length;
    if (need > this.seqs.length) {
      const size = Math.max(need, 2 * this.seqs.length, 256);
      const grow = <T extends Int32Array | Int8Array | Float32Array>(old: T, make: (n: number) => T, per: number): T => {
        const out = make(size * per);
        out.set(old.subarray(0, this.count * per));
        return out;
      };
      this.seqs = grow(this.seqs, (n) => new Int32Array(n), 1);
      this.data = grow(this.data, (n) => new Int8Array(n), dims);
      this.norm2 = grow(this.norm2, (n) => new Float32Array(n), 1);
      this.along = grow(this.along, (n) => new Float32Array(n), 1);
    }
    for (const r of rows) {
      const v = new Int8Array(r.vec);
      if (v.length !== dims) continue; // never another embedder's (fill nulls those first)
      const at = this.count * dims;
      this.data.set(v, at);
      let n2 = 0;
      for (let d = 0; d < dims; d++) {
        n2 += v[d]! * v[d]!;
      }
      const inv = n2 > 0 ? 1 / Math.sqrt(n2) : 0;
      for (let d = 0; d < dims; d++) this.sum[d] = this.sum[d]! + v[d]! * inv;
      this.seqs[this.count] = r.seq;
      this.norm2[this.count] = n2;
      this.count++;
      this.upTo = r.seq;
    }
    if (this.count - this.meanCount > this.meanCount * MEAN_DRIFT) this.remean(0);
    else this.remean(this.count - rows.length);
  }

  /** The common direction again (from `from` = 0), or the rows from `from` on measured against the one kept. */
  private remean(from: number): void {
    const dims = this.dims;
    if (from === 0) {
      let n = 0;
      for (let d = 0; d < dims; d++) n += this.sum[d]! * this.sum[d]!;
      const inv = n > 0 ? 1 / Math.sqrt(n) : 0;
      for (let d = 0; d < dims; d++) this.mean[d] = this.sum[d]! * inv;
      this.meanCount = this.count;
    }
    for (let i = from; i < this.count; i++) {
      let dot = 0;
      const at = i * dims;
      for (let d = 0; d < dims; d++) dot += this.data[at + d]! * this.mean[d]!;
      this.along[i] = dot;
    }
  }

  /** `query` moved toward the first FEEDBACK_HITS of the `feedback` rows held (a query with no known word stays all zeros). */
  private withFeedback(query: Float32Array, feedback: readonly number[]): Float32Array {
    if (!query.some((x) => x !== 0)) return query;
    const rows = feedback.slice(0, FEEDBACK_HITS).flatMap((seq) => {
      const i = this.rowOf(seq);
      return i === undefined || this.norm2[i]! === 0 ? [] : [i];
    });
    if (rows.length === 0) return query;
    const dims = this.dims;
    const out = Float32Array.from(query);
    for (const i of rows) {
      const k = FEEDBACK_WEIGHT / rows.length / Math.sqrt(this.norm2[i]!);
      for (let d = 0; d < dims; d++) out[d] = out[d]! + k * this.data[i * dims + d]!;
    }
    let n = 0;
    for (const x of out) n += x * x;
    const inv = 1 / Math.sqrt(n);
    for (let d = 0; d < dims; d++) out[d] = out[d]! * inv;
    return out;
  }

  /** The row holding `seq` (the rows are in ascending seq), if it has a vector. */
  private rowOf(seq: number): number | undefined {
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = this.seqs[mid]!;
      if (at === seq) return mid;
      if (at < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /**
   * The `limit` rows older than `beforeSeq` closest to `query` (cosine without the common direction), best first;
   * [] when the query has no known word. Missing vectors are filled first.
   */
  search(sql: SqlStorage, embedder: TurnEmbedder, query: string, beforeSeq: number, limit: number, feedback: readonly number[] = []): RecallHit[] {
    const asked = embedder.embed(query);
    if (!asked) return [];
    this.load(sql);
    if (this.count === 0) return [];
    const q = this.withFeedback(asked, feedback);
    const dims = this.dims;
    let qn = 0;
    let qm = 0;
    for (let d = 0; d < dims; d++) {
      qn += q[d]! * q[d]!;
      qm += q[d]! * this.mean[d]!;
    }
    const rest = qn - qm * qm;
    if (qn === 0 || rest <= 1e-9) return [];
    const qInv = 1 / Math.sqrt(rest);
    if (this.scores.length < this.count) this.scores = new Float32Array(this.seqs.length);
    const best: number[] = [];
    const scores = this.scores;
    const data = this.data;
    let floor = -Infinity;
    let last = this.count - 1;
    while (last >= 0 && this.seqs[last]! >= beforeSeq) last--; // ascending: the newest rows are skipped from the end
    // Newest first, so of equal scores the newer ranks first (as in the full-text channel, recall.ts distinctHits)
    // with strict comparisons alone: a row that ties the worst kept costs one comparison, not a walk through its equals.
    for (let i = last; i >= 0; i--) {
      const at = i * dims;
      let dot = 0;
      for (let d = 0; d < dims; d++) dot += q[d]! * data[at + d]!;
      const a = this.along[i]!;
      const left = this.norm2[i]! - a * a;
      // Rounded as it is kept, so a score compares equal to its own kept copy.
      const s = Math.fround(left > 1e-9 ? ((dot - qm * a) / Math.sqrt(left)) * qInv : 0);
      scores[i] = s;
      if (s <= floor) continue;
      // Insertion into the best `limit`, best first (limit is small: a few dozen rows).
      if (best.length === limit) best.pop();
      let k = best.length;
      while (k > 0 && scores[best[k - 1]!]! < s) k--;
      best.splice(k, 0, i);
      if (best.length === limit) floor = scores[best[limit - 1]!]!;
    }
    return best.map((i) => ({ seq: this.seqs[i]!, score: scores[i]! }));
  }
}
