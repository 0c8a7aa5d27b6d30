import type { z } from "@hono/zod-openapi";
import { decodeHead, type Head } from "./thread-rows";

/**
 * The meta rows other capabilities keep here, read and written through `value` / `json` / `setValue`:
 * the pending bookkeeping's four (src/thread/pending-bookkeeping.ts), the thread log's history total
 * (history-bytes.ts; written with the head, by setHead), the LangGraph rows' total (langgraph-checkpoints.ts) and whether LangGraph's
 * thread API created the thread before its first run (`api_thread`, src/thread/run-records.ts). One list, so no two
 * capabilities can use one key.
 */
export type KeptMetaKey = "pending_listing" | "sending_bookkeeping" | "bookkeeping_sender" | "bookkeeping_seq" | "history_bytes" | "lg_bytes" | "api_thread";

/**
 * The thread object's `meta` rows, one capability: the schema version (written by the
 * migration, sql-schema.ts, which opens this), the thread log's head, the newest facts bookmark a run of this thread has seen, and the rows other
 * capabilities keep (KeptMetaKey). Nothing else reads or writes the `meta` table.
 */
export class ThreadMeta {
  /** The facts bookmark as last read or written: only this object writes it, so the copy stays current. */
  #bookmark: { value: string | undefined } | undefined;

  /** Over tables already migrated: open it with `openThreadMeta` (sql-schema.ts), which migrates first. */
  constructor(private readonly sql: SqlStorage) {}

  /** The schema version the tables are at (SCHEMA_VERSION once opened). */
  schemaVersion(): number {
    return Number(this.#get("schema_version") ?? 0);
  }

  /** The thread log's head checkpoint, or null for an empty thread. */
  head(): Head | null {
    const raw = this.#get("head");
    return raw ? decodeHead(raw) : null;
  }

  /** Inside the thread log's transaction, with the checkpoint it points at and the history's new total (history-bytes.ts), in one statement. */
  setHead(head: Head, historyBytes: number): void {
    this.sql.exec(
      `INSERT INTO meta (key, value) VALUES ('head', ?), ('history_bytes', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      JSON.stringify(head),
      String(historyBytes),
    );
  }

  /** The newest facts bookmark a run of this thread has seen (read from storage once per opened object). */
  factsBookmark(): string | undefined {
    this.#bookmark ??= { value: this.#get("facts_bookmark") };
    return this.#bookmark.value;
  }

  /** Keeps `bookmark` when it is newer than the stored one (the caller compares; memory follows even if the write fails). */
  setFactsBookmark(bookmark: string): void {
    if (bookmark === this.factsBookmark()) return;
    this.#bookmark = { value: bookmark };
    this.#set("facts_bookmark", bookmark);
  }

  /** A kept row's text, or undefined. */
  value(key: KeptMetaKey): string | undefined {
    return this.#get(key);
  }

  /** A kept row's JSON read as `schema`; null when absent or not of that shape (a row from an older version). */
  json<T>(key: KeptMetaKey, schema: z.ZodType<T>): T | null {
    return this.#json(key, schema);
  }

  /** Sets a kept row, or removes it when `value` is null. */
  setValue(key: KeptMetaKey, value: string | null): void {
    if (value === null) this.#delete(key);
    else this.#set(key, value);
  }

  #json<T>(key: string, schema: z.ZodType<T>): T | null {
    const raw = this.#get(key);
    const parsed = raw ? schema.safeParse(JSON.parse(raw)) : undefined;
    return parsed?.success ? parsed.data : null;
  }

  #delete(key: string): void {
    this.sql.exec(`DELETE FROM meta WHERE key = ?`, key);
  }

  #get(key: string): string | undefined {
    return this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = ?`, key).toArray()[0]?.value;
  }

  #set(key: string, value: string): void {
    this.sql.exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value);
  }
}
