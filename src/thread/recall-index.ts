/**
 * The thread's recall index: an FTS5 table over the text of its live user and assistant
 * messages (rowid = messages.seq), kept in step by triggers on `messages` — so every write
 * that changes indexed rows (replace, remove, remove_all, fork's rebuild, any repair) changes the
 * index in the same transaction — and new messages join it in batches (v10, RECALL_BATCHED_DDL).
 * Nothing ever rebuilds it per turn. Deleting the thread (deleteAll) deletes it.
 *
 * - Contentless (`content=''`) with `contentless_delete=1`: the text is stored once, in
 *   messages.json; the index holds only terms and positions, and rows delete by rowid.
 * - Tokenizer FTS_TOKENIZE (v15): FTS5's built-in Porter stemmer over Unicode words, marks included,
 *   the same as facts_fts in D1 (migrations/0013, 0035), so "painted" finds "painting".
 *   Both are part of FTS5 itself, which Durable Objects' SQLite ships (checked in workerd, whose
 *   SQLite build deployed objects run).
 * - Only the live rows are indexed, and live rows are the current branch: a fork rebuilds them,
 *   so the branch it left is never recalled, and a removed message is gone from the index.
 */

import { FTS_TOKENIZE, matchExpression, searchTerms } from "../core/search-terms";
import { messageHash } from "./message-hash";
import { decodeMessage } from "./thread-rows";

/**
 * The searchable text of a stored message's JSON: a string content, or its text parts joined.
 * A row that is not valid JSON indexes as empty: the index must never fail the write it follows
 * (reading such a row is the thread's own coded storage error, BEM-098).
 */
export const messageText = (json: string): string =>
  `CASE WHEN NOT json_valid(${json}) THEN '' ELSE CASE json_type(${json}, '$.content') WHEN 'text' THEN json_extract(${json}, '$.content') ` +
  `WHEN 'array' THEN (SELECT group_concat(json_extract(p.value, '$.text'), ' ') FROM json_each(${json}, '$.content') AS p WHERE json_extract(p.value, '$.type') = 'text') ` +
  `ELSE '' END END`;

/** Roles whose text is recalled by its words (tool results come along with their call, never alone). */
export const INDEXED_ROLES = "('user', 'assistant')";

export const RECALL_DDL: readonly string[] = [
  `CREATE VIRTUAL TABLE recall_fts USING fts5(text, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2')`,
  `CREATE TRIGGER messages_recall_insert AFTER INSERT ON messages WHEN new.role IN ${INDEXED_ROLES} BEGIN
     INSERT INTO recall_fts (rowid, text) VALUES (new.seq, ${messageText("new.json")});
   END`,
  `CREATE TRIGGER messages_recall_delete AFTER DELETE ON messages WHEN old.role IN ${INDEXED_ROLES} BEGIN
     DELETE FROM recall_fts WHERE rowid = old.seq;
   END`,
  `CREATE TRIGGER messages_recall_update AFTER UPDATE OF json, role ON messages BEGIN
     DELETE FROM recall_fts WHERE rowid = old.seq AND old.role IN ${INDEXED_ROLES};
     INSERT INTO recall_fts (rowid, text) SELECT new.seq, ${messageText("new.json")} WHERE new.role IN ${INDEXED_ROLES};
   END`,
  // Threads written before the index: their live messages, once, when the object migrates.
  `INSERT INTO recall_fts (rowid, text) SELECT seq, ${messageText("json")} FROM messages WHERE role IN ${INDEXED_ROLES}`,
];

/**
 * v9: FTS5 merges the index's segments as part of each write that adds one (`automerge`), which on a
 * turn is inside the save its answer waits for (the merge's pages go in the same commit). Off, the
 * thread object merges after the answer instead (settleRecallIndex): the same index, the same hits,
 * the merging off the turn's path. FTS5's crisis merge (16 segments on one level, in the write)
 * still bounds what writes outside a turn leave behind (a thread state POST, a fork).
 */
export const RECALL_AUTOMERGE_OFF_DDL: readonly string[] = [`INSERT INTO recall_fts (recall_fts, rank) VALUES ('automerge', 0)`];

/**
 * v10: new messages join the index in batches, not in the write that stores them. Indexing a turn's
 * two messages was the largest single cost of a run's save (its tokens, a new segment's pages in the
 * commit the answer waits for), and the newest messages are the ones recall never needs: they are the
 * recent window. So the index covers every live message up to `recall_indexed.through`; messages above
 * it wait, and join in one statement (one segment for the batch):
 * - after a run's answer, once RECALL_BATCH_ROWS positions wait (settleRecallIndex, with the merging);
 * - before a recall reads rows older than its window, when one of those waits (catchUpRecallIndex):
 *   a window shorter than the batch, or history a thread state POST imported.
 * Messages at or below `through` (a position reused after removals, a fork's rebuilt rows, a replace
 * or remove of an indexed message) stay in step in their own write, through the triggers, as before.
 * What a recall finds is therefore the same as with every message indexed: waiting messages are all
 * newer than the window's first, which recall never returns. Only BM25's row count and average
 * length, which count the index's rows, leave out the few waiting ones until they join.
 */
export const RECALL_BATCHED_DDL: readonly string[] = [
  `DROP TRIGGER messages_recall_insert`,
  `DROP TRIGGER messages_recall_delete`,
  `DROP TRIGGER messages_recall_update`,
  `CREATE TABLE recall_indexed (through INTEGER NOT NULL)`,
  `INSERT INTO recall_indexed (through) SELECT COALESCE(MAX(seq), 0) FROM messages`,
  `CREATE TRIGGER messages_recall_insert AFTER INSERT ON messages
     WHEN new.role IN ${INDEXED_ROLES} AND new.seq <= (SELECT through FROM recall_indexed) BEGIN
     INSERT INTO recall_fts (rowid, text) VALUES (new.seq, ${messageText("new.json")});
   END`,
  `CREATE TRIGGER messages_recall_delete AFTER DELETE ON messages
     WHEN old.role IN ${INDEXED_ROLES} AND old.seq <= (SELECT through FROM recall_indexed) BEGIN
     DELETE FROM recall_fts WHERE rowid = old.seq;
   END`,
  `CREATE TRIGGER messages_recall_update AFTER UPDATE OF json, role ON messages
     WHEN old.seq <= (SELECT through FROM recall_indexed) BEGIN
     DELETE FROM recall_fts WHERE rowid = old.seq AND old.role IN ${INDEXED_ROLES};
     INSERT INTO recall_fts (rowid, text) SELECT new.seq, ${messageText("new.json")} WHERE new.role IN ${INDEXED_ROLES};
   END`,
];

/**
 * v15: the index rebuilt with marks as word characters (FTS_TOKENIZE): unicode61 took only letters and digits,
 * so a Devanagari or Tamil word was indexed as its consonants apart and never found. The same rows as before
 * (the live messages up to `through`), merging still left to settleRecallIndex.
 */
export const RECALL_MARKS_DDL: readonly string[] = [
  `DROP TABLE recall_fts`,
  `CREATE VIRTUAL TABLE recall_fts USING fts5(text, content = '', contentless_delete = 1, tokenize = ${FTS_TOKENIZE})`,
  ...RECALL_AUTOMERGE_OFF_DDL,
  `INSERT INTO recall_fts (rowid, text) SELECT seq, ${messageText("json")} FROM messages WHERE role IN ${INDEXED_ROLES} AND seq <= (SELECT through FROM recall_indexed) ORDER BY seq`,
];

/** Positions that wait before a run's answer brings them into the index (4 turns of a user and an assistant message). */
export const RECALL_BATCH_ROWS = 8;

/** Pages of merging one call does at most (FTS5's `merge`, only where a level holds 4 segments or more). */
export const RECALL_MERGE_PAGES = 64;

/** Where the index stands: every live message up to `through` is in it; `highest` is the thread's newest position. */
export function recallIndexed(sql: SqlStorage): { through: number; highest: number } {
  return sql.exec<{ through: number; highest: number }>(`SELECT through, (SELECT COALESCE(MAX(seq), 0) FROM messages) AS highest FROM recall_indexed`).one();
}

/** The waiting messages join the index (one statement, one segment) and get their row for a vector (v14); the caller runs it in a transaction. */
export function indexWaiting(sql: SqlStorage): void {
  sql.exec(
    `INSERT OR REPLACE INTO recall_vectors (seq, vec) SELECT seq, NULL FROM messages WHERE seq > (SELECT through FROM recall_indexed) AND role IN ${INDEXED_ROLES}`,
  );
  sql.exec(
    `INSERT INTO recall_fts (rowid, text) SELECT seq, ${messageText("json")} FROM messages WHERE seq > (SELECT through FROM recall_indexed) AND role IN ${INDEXED_ROLES} ORDER BY seq`,
  );
  sql.exec(`UPDATE recall_indexed SET through = MAX(through, (SELECT COALESCE(MAX(seq), 0) FROM messages))`);
}

/**
 * The merging `automerge` would have done in the writes since the last call (a few pages, or nothing).
 * True when it merged: FTS5 counts one change for a `merge` that found nothing to do, more for one that
 * worked (its documented test), so a caller knows when the index is merged as far as it goes.
 */
export function mergeRecallIndex(sql: SqlStorage): boolean {
  const changes = () => sql.exec<{ n: number }>(`SELECT total_changes() AS n`).one().n;
  const before = changes();
  sql.exec(`INSERT INTO recall_fts (recall_fts, rank) VALUES ('merge', ?)`, RECALL_MERGE_PAGES);
  return changes() - before > 1;
}

/** One match: the message's position and its BM25 score (higher is closer). */
export type RecallHit = { seq: number; score: number };

/**
 * A recall query as FTS5 expressions (quoted words OR-ed, never caller syntax, see recallMatch):
 * the rows matching a `rare` word are the candidates; `common` words, when present, add to a
 * candidate's score exactly as in one OR of all the words, but find no row on their own.
 */
export type RecallMatch = { rare: string; common: string | null; words: { rare: string[]; common: string[] } };

/**
 * The ranked rows of `m` as one SELECT (rowid AS seq, bm: its bm25(), lower is closer), with `where` added to each arm.
 * Callers order by `bm`, not FTS5's `rank` column: the same bm25() values, but `ORDER BY rank`
 * makes FTS5 prepare and run a nested sorting statement per query (~40% of the search's time on
 * a 419-turn thread), while `ORDER BY bm25()` is SQLite's own top-N sort.
 * With common words: the candidates that also hold one, and those that hold none — BM25 over a
 * query's phrases counts every phrase whichever arm matched (a phrase a row lacks adds nothing),
 * so each row's score is the one an OR of all the words gives it, while FTS5 scores only the
 * rare words' rows (the cost is per matched row: its BM25 and its length).
 */
function rankedRows(m: RecallMatch, where: string, whereArgs: readonly number[]): { select: string; args: (string | number)[] } {
  const arm = `SELECT rowid AS seq, bm25(recall_fts) AS bm FROM recall_fts WHERE recall_fts MATCH ?${where}`;
  if (m.common === null) return { select: arm, args: [m.rare, ...whereArgs] };
  return {
    select: `${arm} UNION ALL ${arm}`,
    args: [`(${m.rare}) AND (${m.common})`, ...whereArgs, `(${m.rare}) NOT (${m.common})`, ...whereArgs],
  };
}

/** The live messages older than `beforeSeq` best matching `m`, best first (the newer of equal scores first), at most `limit`. */
export function searchRecall(sql: SqlStorage, m: RecallMatch, beforeSeq: number, limit: number): RecallHit[] {
  const { select, args } = rankedRows(m, " AND rowid < ?", [beforeSeq]);
  const hits: RecallHit[] = [];
  for (const r of sql.exec<{ seq: number; bm: number }>(`${select} ORDER BY bm, seq DESC LIMIT ?`, ...args, limit)) hits.push({ seq: r.seq, score: -r.bm });
  return hits;
}

/** The best matches among all live messages, by id and content hash (recall over a list held in memory: recall.ts recallOver). */
export function searchLive(sql: SqlStorage, m: RecallMatch, limit: number): { seq: number; id: string; hash: string; score: number }[] {
  const { select, args } = rankedRows(m, "", []);
  return sql
    .exec<{ seq: number; id: string; hash: string | null; json: string | null; bm: number }>(
      `SELECT h.seq AS seq, m.id AS id, m.hash AS hash, CASE WHEN m.hash IS NULL THEN m.json END AS json, h.bm AS bm ` +
        `FROM (${select} ORDER BY bm, seq DESC LIMIT ?) AS h JOIN messages m ON m.seq = h.seq ORDER BY h.bm, h.seq DESC`,
      ...args,
      limit,
    )
    .toArray()
    .map((r) => ({ seq: r.seq, id: r.id, hash: r.hash ?? messageHash(decodeMessage(r.json ?? "{}")), score: -r.bm }));
}

/** The live messages at `seqs`, by position: their id and content hash (as searchLive gives them). */
export function liveRows(sql: SqlStorage, seqs: readonly number[]): Map<number, { id: string; hash: string }> {
  const rows = sql
    .exec<{ seq: number; id: string; hash: string | null; json: string | null }>(
      `SELECT seq, id, hash, CASE WHEN hash IS NULL THEN json END AS json FROM messages WHERE seq IN (SELECT value FROM json_each(?))`,
      JSON.stringify(seqs),
    )
    .toArray();
  return new Map(rows.map((r) => [r.seq, { id: r.id, hash: r.hash ?? messageHash(decodeMessage(r.json ?? "{}")) }]));
}

/**
 * In a thread of more than SCORED_ROWS rows, the candidates of one query are the rows holding
 * one of its rarer words: rarest first, while their document counts sum to at most SCORED_ROWS,
 * so FTS5 scores a bounded number of rows however large the thread (FTS5's cost is per matched
 * row: its BM25 and its length) and however common the words (a speaker's name is in every turn
 * of theirs). The other words are common: they add to a candidate's score, exactly as in one OR
 * of all the words, but bring no row of their own (such a row, holding only common words,
 * scores least anyway). The rarest word is always a rare one. Up to SCORED_ROWS rows every word
 * is a rare one: one query scoring every match costs less than two.
 */
const SCORED_ROWS = 1000;
/** In such a thread, a word found in more than this share of the rows is left out: its BM25 weight is near nothing, and FTS5 reads all its rows to weigh it. */
const DROP_SHARE = 0.25;
/** A remembered count serves until the thread has grown by this share since it was taken. */
const COUNT_DRIFT = 1 / 8;
const MAX_COUNTED = 1024;

/**
 * Document counts of query words (up to a limit), remembered by the thread's store between
 * queries: the object is single-threaded and owns its SQLite, and a count only decides which
 * words are rare, common or left out (scores are always FTS5's own), so one taken a little
 * before the latest writes is as good. A thread that shrank (messages removed) counts afresh.
 */
export class WordCounts {
  private readonly known = new Map<string, { n: number; rows: number; limit: number }>();

  of(sql: SqlStorage, word: string, rows: number, limit: number): number {
    const k = this.known.get(word);
    if (k && rows >= k.rows && rows - k.rows <= k.rows * COUNT_DRIFT && (k.n < k.limit || limit <= k.limit)) return Math.min(k.n, limit);
    if (this.known.size >= MAX_COUNTED || (k && rows < k.rows)) this.known.clear();
    const n = sql
      .exec<{ n: number }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM recall_fts WHERE recall_fts MATCH ? LIMIT ?)`, matchExpression([word]), limit)
      .one().n;
    this.known.set(word, { n, rows, limit });
    return n;
  }
}

/**
 * The FTS5 query for a text (never caller syntax): its search words, in a large thread split
 * into rare and common ones by how many rows each matches (SCORED_ROWS), the too common left
 * out (DROP_SHARE). null: nothing to search for. `highest` is the thread's highest position (its rows, in SCORED_ROWS' sense).
 */
export function recallMatch(
  sql: SqlStorage,
  query: string,
  counts: WordCounts = new WordCounts(),
  highest: () => number = () => sql.exec<{ n: number }>(`SELECT COALESCE(MAX(seq), 0) AS n FROM messages`).one().n,
): RecallMatch | null {
  const terms = searchTerms(query);
  const all = matchExpression(terms);
  if (all === null) return null;
  const whole = { rare: all, common: null, words: { rare: terms, common: [] } };
  if (terms.length === 1) return whole;
  const rows = highest();
  if (rows <= SCORED_ROWS) return whole;
  const drop = Math.floor(rows * DROP_SHARE);
  const counted = terms.map((t) => ({ t, n: counts.of(sql, t, rows, drop + 1) })).sort((a, b) => a.n - b.n);
  const rare: string[] = [];
  const common: string[] = [];
  let scored = 0;
  for (const { t, n } of counted) {
    if (rare.length > 0 && n > drop) break; // this word and every later one: too common to say anything
    if (rare.length === 0 || scored + n <= SCORED_ROWS) {
      rare.push(t);
      scored += n;
    } else common.push(t);
  }
  return { rare: matchExpression(rare)!, common: matchExpression(common), words: { rare, common } };
}
