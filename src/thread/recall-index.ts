/**
 * The thread's recall index: an FTS5 table over the text of its live user and assistant
 * messages (rowid = messages.seq), kept in step by triggers on `messages` — so every write
 * that changes the live rows (append, replace, remove, remove_all, fork's rebuild, any repair)
 * changes the index in the same transaction, and nothing ever rebuilds it per turn. Deleting
 * the thread (deleteAll) deletes it.
 *
 * - Contentless (`content=''`) with `contentless_delete=1`: the text is stored once, in
 *   messages.json; the index holds only terms and positions, and rows delete by rowid.
 * - Tokenizer `porter unicode61 remove_diacritics 2`: FTS5's built-in Porter stemmer over
 *   Unicode words, the same as facts_fts in D1 (migrations/0013), so "painted" finds "painting".
 *   Both are part of FTS5 itself, which Durable Objects' SQLite ships (checked in workerd, whose
 *   SQLite build deployed objects run).
 * - Only the live rows are indexed, and live rows are the current branch: a fork rebuilds them,
 *   so the branch it left is never recalled, and a removed message is gone from the index.
 */

import { matchExpression, searchTerms } from "../core/search-terms";
import { messageHash } from "./message-hash";
import { decodeMessage } from "./thread-rows";

/**
 * The searchable text of a stored message's JSON: a string content, or its text parts joined.
 * A row that is not valid JSON indexes as empty: the index must never fail the write it follows
 * (reading such a row is the thread's own coded storage error, BEM-098).
 */
const textOf = (json: string): string =>
  `CASE WHEN NOT json_valid(${json}) THEN '' ELSE CASE json_type(${json}, '$.content') WHEN 'text' THEN json_extract(${json}, '$.content') ` +
  `WHEN 'array' THEN (SELECT group_concat(json_extract(p.value, '$.text'), ' ') FROM json_each(${json}, '$.content') AS p WHERE json_extract(p.value, '$.type') = 'text') ` +
  `ELSE '' END END`;

/** Roles whose text is recalled by its words (tool results come along with their call, never alone). */
const INDEXED = "('user', 'assistant')";

export const RECALL_DDL: readonly string[] = [
  `CREATE VIRTUAL TABLE recall_fts USING fts5(text, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2')`,
  `CREATE TRIGGER messages_recall_insert AFTER INSERT ON messages WHEN new.role IN ${INDEXED} BEGIN
     INSERT INTO recall_fts (rowid, text) VALUES (new.seq, ${textOf("new.json")});
   END`,
  `CREATE TRIGGER messages_recall_delete AFTER DELETE ON messages WHEN old.role IN ${INDEXED} BEGIN
     DELETE FROM recall_fts WHERE rowid = old.seq;
   END`,
  `CREATE TRIGGER messages_recall_update AFTER UPDATE OF json, role ON messages BEGIN
     DELETE FROM recall_fts WHERE rowid = old.seq AND old.role IN ${INDEXED};
     INSERT INTO recall_fts (rowid, text) SELECT new.seq, ${textOf("new.json")} WHERE new.role IN ${INDEXED};
   END`,
  // Threads written before the index: their live messages, once, when the object migrates.
  `INSERT INTO recall_fts (rowid, text) SELECT seq, ${textOf("json")} FROM messages WHERE role IN ${INDEXED}`,
];

/** One match: the message's position and its BM25 score (higher is closer). */
export type RecallHit = { seq: number; score: number };

/**
 * The live messages older than `beforeSeq` best matching `match` (an FTS5 expression built by
 * matchExpression: quoted words OR-ed, never caller syntax), best first, at most `limit`.
 */
export function searchRecall(sql: SqlStorage, match: string, beforeSeq: number, limit: number): RecallHit[] {
  return sql
    .exec<{ seq: number; rank: number }>(
      `SELECT rowid AS seq, rank FROM recall_fts WHERE recall_fts MATCH ? AND rowid < ? ORDER BY rank LIMIT ?`,
      match,
      beforeSeq,
      limit,
    )
    .toArray()
    .map((r) => ({ seq: r.seq, score: -r.rank }));
}

/** The best matches among all live messages, by id and content hash (recall over a list held in memory: recall.ts recallOver). */
export function searchLive(sql: SqlStorage, match: string, limit: number): { id: string; hash: string; score: number }[] {
  return sql
    .exec<{ id: string; hash: string | null; json: string | null; rank: number }>(
      `SELECT m.id AS id, m.hash AS hash, CASE WHEN m.hash IS NULL THEN m.json END AS json, recall_fts.rank AS rank ` +
        `FROM recall_fts JOIN messages m ON m.seq = recall_fts.rowid WHERE recall_fts MATCH ? ORDER BY recall_fts.rank LIMIT ?`,
      match,
      limit,
    )
    .toArray()
    .map((r) => ({ id: r.id, hash: r.hash ?? messageHash(decodeMessage(r.json ?? "{}")), score: -r.rank }));
}

/** Below this many indexed rows every query word is searched: scoring all matches is cheap. */
const SELECTIVE_FROM_ROWS = 1000;
/** A word found in more than this share of the rows says little about which turn is meant (its BM25 weight is near nothing). */
const COMMON_SHARE = 0.25;

/**
 * The FTS5 expression for a query (quoted words OR-ed, never caller syntax), without the words
 * so common in a large thread that scoring their matches would be most of the cost (a speaker's
 * name in every turn of theirs): each word's matches are counted up to the limit. At least one
 * word is kept. null: nothing to search for.
 */
export function recallMatch(sql: SqlStorage, query: string): string | null {
  const terms = searchTerms(query);
  if (terms.length <= 1) return matchExpression(terms);
  const rows = sql.exec<{ n: number }>(`SELECT COALESCE(MAX(seq), 0) AS n FROM messages`).one().n;
  if (rows < SELECTIVE_FROM_ROWS) return matchExpression(terms);
  const cap = Math.floor(rows * COMMON_SHARE);
  const counted = terms.map((t) => ({
    t,
    n: sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM recall_fts WHERE recall_fts MATCH ? LIMIT ?)`, matchExpression([t]), cap + 1).one().n,
  }));
  const kept = counted.filter((c) => c.n <= cap).map((c) => c.t);
  return matchExpression(kept.length > 0 ? kept : [counted.reduce((a, b) => (b.n < a.n ? b : a)).t]);
}
