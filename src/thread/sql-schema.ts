import { LANGGRAPH_BLOB_WRITER_DDL, LANGGRAPH_CHILDREN_DDL, LANGGRAPH_DDL, LANGGRAPH_WRITER_DDL } from "./langgraph-checkpoints";
import { ThreadMeta } from "./meta";
import { PENDING_BOOKKEEPING_DDL, SENDING_BOOKKEEPING_DDL } from "./pending-bookkeeping";
import { RECALL_AUTOMERGE_OFF_DDL, RECALL_BATCHED_DDL, RECALL_DDL, RECALL_MARKS_DDL } from "./recall-index";
import { RECALL_VECTORS_DDL } from "./recall-vectors";
import { RUN_RECORDS_DDL } from "./run-records";
import { STORED_RESPONSES_DDL } from "./stored-responses";
import { THREAD_LOG_DDL, THREAD_LOG_HASH_COLUMNS } from "./thread-rows";

/**
 * The thread object's schema: the `meta` table, then each capability's own DDL in the
 * order it shipped. One schema version for the object (kept in `meta` by ThreadMeta,
 * src/thread/meta.ts): a live object runs only the entries newer than the stored one,
 * so a release that changes a capability's tables appends an entry here, with the DDL
 * defined beside that capability's code.
 */
export const META_DDL = `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`;

export const MIGRATIONS: readonly (readonly string[])[] = [
  // v1: the thread log (src/thread/thread-store.ts).
  [META_DDL, ...THREAD_LOG_DDL],
  // v2: LangGraph checkpoints (src/thread/langgraph-checkpoints.ts), separate from the thread log.
  LANGGRAPH_DDL,
  // v3: the thread log's resent-history reconciliation columns (src/thread/message-hash.ts).
  THREAD_LOG_HASH_COLUMNS,
  // v4: stored Responses (src/thread/stored-responses.ts), beside the checkpoints they point at.
  [STORED_RESPONSES_DDL],
  // v5: the recall index over the live messages' text, kept in step by triggers (src/thread/recall-index.ts).
  RECALL_DDL,
  // v6: who wrote each LangGraph checkpoint and pending write (replacing another key's needs rewrite_thread).
  LANGGRAPH_WRITER_DDL,
  // v7: usage and thread-list writes the runs owe D1, sent in batches (src/thread/pending-bookkeeping.ts).
  [PENDING_BOOKKEEPING_DDL],
  // v8: the rows of the bookkeeping send under way, kept until D1 has them (sent again, never twice, after a lost answer or a reset).
  [SENDING_BOOKKEEPING_DDL],
  // v9: the recall index merges after a turn's answer, not inside its save (src/thread/recall-index.ts).
  RECALL_AUTOMERGE_OFF_DDL,
  // v10: new messages join the recall index in batches, off the save a run's answer waits for (src/thread/recall-index.ts).
  RECALL_BATCHED_DDL,
  // v11: a LangGraph checkpoint's children by index (every new pending write asks whether its checkpoint was continued).
  LANGGRAPH_CHILDREN_DDL,
  // v12: who wrote each LangGraph channel value (another key's version with other content is not taken over).
  LANGGRAPH_BLOB_WRITER_DDL,
  // v13: the LangGraph API's runs and their events (src/thread/run-records.ts), for join and rejoin.
  RUN_RECORDS_DDL,
  // v14: each indexed message's vector for recall by meaning, kept in step like the full-text index (src/thread/recall-vectors.ts).
  RECALL_VECTORS_DDL,
  // v15: the recall index rebuilt with marks as word characters (Devanagari, Tamil: src/thread/recall-index.ts).
  RECALL_MARKS_DDL,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** Runs `fn` as one SQLite transaction (a Durable Object's `storage.transactionSync`): a throw rolls it back. */
export type Transaction = <T>(fn: () => T) => T;

/** Brings the object's tables up to SCHEMA_VERSION; a no-op (one read) when current. Synchronous, so a constructor can run it. */
export function migrate(sql: SqlStorage, transaction: Transaction): void {
  const hasMeta = sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).toArray().length > 0;
  const stored = hasMeta ? Number(sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'schema_version'`).toArray()[0]?.value ?? 0) : 0;
  if (stored >= SCHEMA_VERSION) return;
  transaction(() => {
    for (let v = stored; v < SCHEMA_VERSION; v++) {
      for (const ddl of MIGRATIONS[v] ?? []) sql.exec(ddl);
    }
    sql.exec(`INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, String(SCHEMA_VERSION));
  });
}

/** Brings the object's tables up to date (one read when they are) and opens its meta rows. */
export function openThreadMeta(storage: DurableObjectStorage): ThreadMeta {
  migrate(storage.sql, (fn) => storage.transactionSync(fn));
  return new ThreadMeta(storage.sql);
}
