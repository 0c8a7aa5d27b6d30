import { Lease } from "./run-lease";
import { migrate } from "./sql-schema";
import { decodeHead, type Head } from "./thread-rows";

/**
 * The thread object's `meta` rows, one capability: the schema version (it migrates the
 * object's tables when opened), the thread log's head, the stored copy of an RPC holder's
 * run lease, and the newest facts bookmark a run of this thread has seen. Nothing else
 * writes the `meta` table.
 */
export class ThreadMeta {
  /** The facts bookmark as last read or written: only this object writes it, so the copy stays current. */
  #bookmark: { value: string | undefined } | undefined;

  private constructor(private readonly sql: SqlStorage) {}

  /** Brings the object's tables up to date (one read when they are) and opens its meta rows. */
  static open(storage: DurableObjectStorage): ThreadMeta {
    migrate(storage.sql, (fn) => storage.transactionSync(fn));
    return new ThreadMeta(storage.sql);
  }

  /** The schema version the tables are at (SCHEMA_VERSION once opened). */
  schemaVersion(): number {
    return Number(this.#get("schema_version") ?? 0);
  }

  /** The thread log's head checkpoint, or null for an empty thread. */
  head(): Head | null {
    const raw = this.#get("head");
    return raw ? decodeHead(raw) : null;
  }

  /** Inside the thread log's transaction, with the checkpoint it points at. */
  setHead(head: Head): void {
    this.#set("head", JSON.stringify(head));
  }

  /** The stored lease of a holder outside the object (it survives an eviction); null when none. */
  lease(): Lease | null {
    const raw = this.#get("run_lease");
    const parsed = raw ? Lease.safeParse(JSON.parse(raw)) : undefined;
    return parsed?.success ? parsed.data : null;
  }

  setLease(lease: Lease | null): void {
    if (lease) this.#set("run_lease", JSON.stringify(lease));
    else this.sql.exec(`DELETE FROM meta WHERE key = 'run_lease'`);
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

  #get(key: string): string | undefined {
    return this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = ?`, key).toArray()[0]?.value;
  }

  #set(key: string, value: string): void {
    this.sql.exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value);
  }
}
