import { LANGGRAPH_DDL, LANGGRAPH_WRITER_DDL } from "./langgraph-checkpoints";
import { RECALL_DDL } from "./recall-index";
import { STORED_RESPONSES_DDL } from "./stored-responses";

/**
 * DDL of a thread object, by schema version. A live object runs only the
 * versions newer than the one stored in its `meta` row, so later releases
 * append an entry here to migrate existing threads in place.
 *
 * - messages: the live message channel at the head checkpoint. `seq` gives
 *   order (replace keeps the row, so keeps the position); reading newest-first
 *   is a reverse scan of the rowid, with tokens stored per row at write time.
 * - channels: live value of every other channel, with its reducer.
 * - checkpoints + writes: the delta of each update, one row per write (so one
 *   1 MiB message never meets the 2 MB row limit). State at any checkpoint is
 *   its parent chain's writes replayed in order.
 */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    `CREATE TABLE messages (
       seq INTEGER PRIMARY KEY,
       id TEXT NOT NULL UNIQUE,
       role TEXT NOT NULL,
       json TEXT NOT NULL,
       tokens INTEGER NOT NULL,
       bytes INTEGER NOT NULL,
       created_at INTEGER NOT NULL
     )`,
    `CREATE TABLE channels (name TEXT PRIMARY KEY, reducer TEXT NOT NULL, value TEXT NOT NULL)`,
    `CREATE TABLE checkpoints (
       id TEXT PRIMARY KEY,
       parent_id TEXT,
       step INTEGER NOT NULL,
       source TEXT NOT NULL,
       created_at INTEGER NOT NULL
     )`,
    `CREATE TABLE writes (
       checkpoint_id TEXT NOT NULL,
       idx INTEGER NOT NULL,
       json TEXT NOT NULL,
       PRIMARY KEY (checkpoint_id, idx)
     )`,
  ],
  // v2: LangGraph checkpointer tables (src/thread/langgraph-checkpoints.ts), separate from the above.
  LANGGRAPH_DDL,
  // v3 (resent-history reconciliation): each live message's content hash (src/thread/message-hash.ts)
  // and the checkpoint that wrote it. Rows written before v3 keep NULLs; their hash is computed when read.
  [`ALTER TABLE messages ADD COLUMN hash TEXT`, `ALTER TABLE messages ADD COLUMN cp TEXT`],
  // v4: the thread's stored Responses (src/thread/stored-responses.ts), kept beside the checkpoints they point at.
  [STORED_RESPONSES_DDL],
  // v5: the recall index over the live messages' text, kept in step by triggers (src/thread/recall-index.ts).
  RECALL_DDL,
  // v6: who wrote each LangGraph checkpoint and pending write (replacing another key's needs rewrite_thread).
  LANGGRAPH_WRITER_DDL,
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
