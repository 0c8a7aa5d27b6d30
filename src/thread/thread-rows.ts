import { z } from "@hono/zod-openapi";
import { Message } from "../core/message";
import { estimateTokens } from "../core/tokens";
import { type Checkpoint, Source, Write } from "./types";

/**
 * How a thread's rows are written and read back. Every JSON column is decoded
 * through its schema, not cast: a row that does not fit (a bug, or a row of a
 * future release read by an older one) fails loudly where it is read instead
 * of travelling on as a wrong type.
 */

/**
 * The thread log's tables (schema v1; src/thread/sql-schema.ts orders every capability's DDL).
 * - messages: the live message channel at the head checkpoint. `seq` gives
 *   order (replace keeps the row, so keeps the position); reading newest-first
 *   is a reverse scan of the rowid, with tokens stored per row at write time.
 * - channels: live value of every other channel, with its reducer.
 * - checkpoints + writes: the delta of each update, one row per write (so one
 *   1 MiB message never meets the 2 MB row limit). State at any checkpoint is
 *   its parent chain's writes replayed in order.
 */
export const THREAD_LOG_DDL: readonly string[] = [
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
];

/**
 * Schema v3 (resent-history reconciliation): each live message's content hash
 * (src/thread/message-hash.ts) and the checkpoint that wrote it. Rows written before
 * v3 keep NULLs; their hash is computed when read.
 */
export const THREAD_LOG_HASH_COLUMNS: readonly string[] = [`ALTER TABLE messages ADD COLUMN hash TEXT`, `ALTER TABLE messages ADD COLUMN cp TEXT`];

/** The `head` row of `meta`: the live checkpoint, how many messages it holds, and the id clock to continue from. */
export const Head = z.object({ id: z.string(), step: z.number().int(), count: z.number().int(), clock: z.string() });
export type Head = z.infer<typeof Head>;

/** A row of `checkpoints` (its writes are separate rows). */
export const CheckpointRow = z.object({
  id: z.string(),
  parent_id: z.string().nullable(),
  step: z.number().int(),
  source: Source,
  created_at: z.number().int(),
});
export type CheckpointRow = z.infer<typeof CheckpointRow>;

export const decodeMessage = (json: string): Message => Message.parse(JSON.parse(json));
export const decodeWrite = (json: string): Write => Write.parse(JSON.parse(json));
export const decodeHead = (json: string): Head => Head.parse(JSON.parse(json));

export const toCheckpoint = (r: CheckpointRow, writes: Write[]): Checkpoint => ({ ...r, writes });

const utf8 = new TextEncoder();

/** A message as its `messages` row stores it: the JSON, its size in bytes and its token estimate (kept so reads need not recount). */
export type EncodedMessage = { text: string; bytes: number; tokens: number };

export function encodeMessage(m: Message): EncodedMessage {
  const text = JSON.stringify(m);
  return { text, bytes: utf8.encode(text).length, tokens: estimateTokens(m) };
}
