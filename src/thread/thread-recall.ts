import type { Message } from "../core/message";
import { type DenseSearch, RecallRows, recallOver, recallWindow } from "./recall";
import { DENSE_WEIGHT, fuseScores } from "../embed/fusion";
import { indexWaiting, liveRows, mergeRecallIndex, RECALL_BATCH_ROWS, recallIndexed, recallMatch, searchLive, WordCounts } from "./recall-index";
import { RecallScores } from "./recall-scores";
import type { TurnEmbedder } from "../embed/embedder";
import { RecallVectors } from "./recall-vectors";
import type { Transaction } from "./sql-schema";
import type { TailEntry } from "./tail-cache";
import type { LoadRecentResult, RecallAsk } from "./types";

/** The lowest and highest position an update's INSERT gave its new rows. */
export type Positions = { first: number; last: number };

/**
 * The thread log's recall of earlier turns (docs/concepts/recall.md), as its store keeps it:
 * what recall learnt between queries — query words' document counts (recall-index.ts), the rows older
 * than the window it read (recall.ts RecallRows) and what FTS5 said of each word's rows (recall-scores.ts)
 * — and the index's upkeep around a run (waiting messages join it, its segments merge). The store tells
 * it of each write: an append keeps what it learnt, any other write makes it forget.
 */
export class ThreadRecall {
  private readonly counts = new WordCounts();
  private readonly known = new RecallRows();
  private readonly scores = new RecallScores();
  /**
   * The thread's highest position less the index's reach (`through`), as this object followed its own appends
   * since it last read them; undefined: read them (after every other write, and at first). Spares the run's settle
   * a read. Below zero after removals at the end: the next appends take positions the triggers index at once.
   */
  private waiting: number | undefined;
  /** Whether the index may have segments to merge: since the last merge that found nothing to do, something wrote it. */
  private mergeDue = true;
  /** The dense channel's vectors in memory, for the embedder in use (none: full-text alone). */
  private vectors: RecallVectors | undefined;
  /**
   * Whether every indexed row has its vector, as this object followed its writes since it last filled them all:
   * a recall then skips the fill (its transaction and reads). Rows lose or lack one only when they join the index,
   * on another write, or with another embedder, and each of those clears it.
   */
  private vectorsFull = false;

  constructor(
    private readonly sql: SqlStorage,
    private readonly transaction: Transaction,
    private embedder?: TurnEmbedder,
  ) {
    this.vectors = embedder && new RecallVectors(embedder.dims);
  }

  /** The dense channel's embedder from now on (a run's agent may name its own): memory forgets another's vectors. */
  use(embedder: TurnEmbedder): void {
    if (embedder === this.embedder) return;
    if (embedder.id !== this.embedder?.id) {
      this.vectors = new RecallVectors(embedder.dims);
      this.vectorsFull = false;
    }
    this.embedder = embedder;
  }

  /** The dense channel's embedder in use (none: full-text alone). */
  embedderInUse(): TurnEmbedder | undefined {
    return this.embedder;
  }

  /** Texts of up to `limit` messages whose vector the embedder in use has not made (a remote one fetches them ahead). */
  missingVectors(limit: number): string[] {
    return this.embedder ? RecallVectors.missing(this.sql, this.embedder, limit) : [];
  }

  /** The turns for `budget` tokens with recall; `recent` is the store's newest-window read (its tail cache). */
  window(recent: (maxTokens: number) => LoadRecentResult, budget: number, ask: RecallAsk): LoadRecentResult {
    return recallWindow(this.sql, recent, budget, ask, {
      counts: this.counts,
      known: this.known,
      scores: this.scores,
      catchUp: () => this.indexWaiting(),
      dense: this.dense(),
    });
  }

  /** The dense search when the embedder is ready: missing vectors filled first (their own transaction), then a scan in memory. */
  private dense(): DenseSearch | undefined {
    const { embedder, vectors } = this;
    if (!embedder || !vectors || !embedder.embed("")) return undefined;
    // A remote embedder's vectors are made in the background only: until it switched them, there are none of its own.
    if (embedder.remote && !RecallVectors.current(this.sql, embedder)) return undefined;
    return (query, before, limit, feedback) => {
      if (!embedder.remote && !this.vectorsFull) this.fillVectors();
      return vectors.search(this.sql, embedder, query, before, limit, feedback);
    };
  }

  /**
   * Embeds the messages whose vector is missing (at most `limit`), when the embedder is ready; how many it filled.
   * A failure leaves them missing (filled on a later call).
   */
  fillVectors(limit?: number): number {
    const { embedder, vectors } = this;
    if (!embedder || !vectors || !embedder.embed("")) return 0;
    try {
      const { filled, left } = this.transaction(() => vectors.fill(this.sql, embedder, limit));
      this.vectorsFull = !left;
      return filled;
    } catch (e) {
      vectors.clear();
      this.vectorsFull = false;
      throw e;
    }
  }

  /** Recall over a message list held in memory (a run's whole or replayed state), ranked by the live index. */
  over(messages: readonly Message[], budget: number, ask: RecallAsk): LoadRecentResult {
    return recallOver(
      (query, limit) => {
        // The list's window is positions in the list, not in the thread: every live message is searched, so none may wait.
        const { through, highest } = recallIndexed(this.sql);
        if (highest > through) this.indexWaiting();
        const words = ask.channels?.includes("full_text") ?? true;
        const match = words ? recallMatch(this.sql, query, this.counts) : null;
        const lexical = match === null ? [] : searchLive(this.sql, match, limit);
        // By meaning too, over every live message, fused as in the thread's own window (recall.ts fuseHits).
        const dense = (ask.channels?.includes("dense") ?? true) ? this.dense() : undefined;
        const near = dense
          ? dense(
              query,
              highest + 1,
              limit,
              lexical.map((h) => h.seq),
            )
          : [];
        if (near.length === 0) return lexical;
        const rows = liveRows(
          this.sql,
          near.map((h) => h.seq),
        );
        const hashes = new Map([...lexical, ...rows.values()].map((r) => [r.id, r.hash]));
        return fuseScores(
          lexical.map((h) => ({ key: h.id, score: h.score })),
          near.flatMap((h) => (rows.has(h.seq) ? [{ key: rows.get(h.seq)!.id, score: h.score }] : [])),
          DENSE_WEIGHT,
        ).map((f) => ({ id: f.key, hash: hashes.get(f.key)!, score: f.score }));
      },
      messages,
      budget,
      ask,
    );
  }

  /**
   * The recall index's work kept out of a run's save, called after its answer: the waiting messages join it once
   * RECALL_BATCH_ROWS positions wait, and its segments merge.
   */
  settle(): void {
    if (this.waiting === undefined) {
      const { through, highest } = recallIndexed(this.sql);
      this.waiting = highest - through;
    }
    const join = this.waiting >= RECALL_BATCH_ROWS;
    // Most turns neither index (the batch is not full) nor leave segments to merge: no statement at all.
    if (!join && !this.mergeDue) return;
    this.written(() => {
      if (join) this.joinWaiting();
      this.mergeDue = mergeRecallIndex(this.sql);
    });
    if (join && !this.embedder?.remote) this.fillVectors();
  }

  /** A write other than appends (replace, remove, remove_all, fork, a rollback): what was learnt of older rows no longer holds. */
  forget(): void {
    this.known.clear();
    this.scores.clear();
    this.vectors?.clear();
    this.vectorsFull = false;
    // The triggers keep indexed rows in step in such writes (new segments); what waits is read again.
    this.waiting = undefined;
    this.mergeDue = true;
  }

  /** The waiting messages join the index, in a transaction of their own. */
  private indexWaiting(): void {
    this.written(() => this.joinWaiting());
  }

  private joinWaiting(): void {
    indexWaiting(this.sql);
    this.vectorsFull = false;
    this.waiting = 0;
    this.mergeDue = true;
  }

  /** A transaction on the index; one that fails leaves what this object follows unknown (read again, merge again). */
  private written(fn: () => void): void {
    try {
      this.transaction(fn);
    } catch (e) {
      this.waiting = undefined;
      this.mergeDue = true;
      this.vectorsFull = false;
      throw e;
    }
  }

  /**
   * Rows an update appended (its only writes to messages), kept for recall when it reads older rows at all;
   * `positions`: what its INSERT gave them (asked for when keepsAppended). They went in in order, so from the first's to the last's.
   */
  appended(entries: readonly TailEntry[], positions: Positions | undefined): void {
    // Appends take the positions after the highest: each waits for the index, unless at or below its reach (a trigger indexes it: a segment).
    if (this.waiting !== undefined) {
      if (this.waiting < 0 && entries.length > 0) this.mergeDue = true;
      this.waiting += entries.length;
    }
    // Appended at or below the index's reach (or where it stands unknown), a row joins it at once, its vector missing.
    if (entries.length > 0 && (this.waiting === undefined || this.waiting - entries.length < 0)) this.vectorsFull = false;
    if (entries.length === 0 || !this.known.used || !positions) return;
    if (positions.last - positions.first + 1 === entries.length) this.known.appended(positions.last, entries);
  }

  /** Whether appended() keeps the rows by position (recall has read older rows): the save then reports the positions its INSERT gave them. */
  get keepsAppended(): boolean {
    return this.known.used;
  }
}
