import { z } from "@hono/zod-openapi";

/**
 * What a thread's runs owe D1 after their answers — usage counters and the thread list's
 * updated_at — kept in the thread's own SQLite until the object sends them, one batch for many
 * turns (src/object/thread-object.ts flushes on an alarm). A turn's usage is stored in the same
 * storage commit as its save, so nothing is lost if the object goes away before the flush; a
 * failed flush puts its rows back for the next one.
 */
export const PENDING_BOOKKEEPING_DDL = `CREATE TABLE pending_usage (
  tenant_id TEXT NOT NULL,
  day TEXT NOT NULL,
  model TEXT NOT NULL,
  cause TEXT NOT NULL,
  requests INTEGER NOT NULL,
  estimated_requests INTEGER NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cost REAL NOT NULL,
  PRIMARY KEY (tenant_id, day, model, cause)
)`;

/** One counter row to add into D1's `usage` (the same columns). */
export type PendingUsage = {
  tenant_id: string;
  day: string;
  model: string;
  cause: string;
  requests: number;
  estimated_requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
};

/** The thread-list entry to move: its tenant, thread and newest write. */
const PendingListing = z.object({ tenant: z.string(), threadId: z.string(), at: z.number() });
export type PendingListing = z.infer<typeof PendingListing>;

export type TakenBookkeeping = { usage: PendingUsage[]; listing: PendingListing | null };

const LISTING_KEY = "pending_listing";

/** The object's pending bookkeeping, one capability (the table above and one `meta` row are its own). */
/**
 * The upsert that adds a counter row into its day's row: one text for the object's `pending_usage`
 * and D1's `usage` (same columns), so the two can never add up differently.
 */
export const usageUpsertSql = (table: "usage" | "pending_usage"): string =>
  `INSERT INTO ${table} (tenant_id, day, model, cause, requests, estimated_requests, prompt_tokens, completion_tokens, cost)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (tenant_id, day, model, cause) DO UPDATE SET
     requests = requests + excluded.requests,
     estimated_requests = estimated_requests + excluded.estimated_requests,
     prompt_tokens = prompt_tokens + excluded.prompt_tokens,
     completion_tokens = completion_tokens + excluded.completion_tokens,
     cost = cost + excluded.cost`;

/** A row's values in usageUpsertSql's order. */
export const usageValues = (u: PendingUsage) =>
  [u.tenant_id, u.day, u.model, u.cause, u.requests, u.estimated_requests, u.prompt_tokens, u.completion_tokens, u.cost] as const;

export class PendingBookkeeping {
  constructor(private readonly sql: SqlStorage) {}

  /** Adds a provider call's (or a run's) usage into its day's counter row. */
  addUsage(u: PendingUsage): void {
    this.sql.exec(usageUpsertSql("pending_usage"), ...usageValues(u));
  }

  /** The thread was written at `at`: its list entry moves to the newest such time. */
  listed(l: PendingListing): void {
    const held = this.#listing();
    if (held && held.at >= l.at) return;
    this.sql.exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, LISTING_KEY, JSON.stringify(l));
  }

  /** Whether anything waits to be sent. */
  pending(): boolean {
    return this.sql.exec(`SELECT 1 FROM pending_usage LIMIT 1`).toArray().length > 0 || this.#listing() !== null;
  }

  /** Everything pending, removed in one synchronous step (so a turn adding meanwhile starts new rows); putBack() if sending it fails. */
  take(): TakenBookkeeping {
    const usage = this.sql
      .exec<PendingUsage>(`SELECT tenant_id, day, model, cause, requests, estimated_requests, prompt_tokens, completion_tokens, cost FROM pending_usage`)
      .toArray();
    const listing = this.#listing();
    if (usage.length > 0) this.sql.exec(`DELETE FROM pending_usage`);
    if (listing) this.sql.exec(`DELETE FROM meta WHERE key = ?`, LISTING_KEY);
    return { usage, listing };
  }

  putBack(taken: TakenBookkeeping): void {
    for (const u of taken.usage) this.addUsage(u);
    if (taken.listing) this.listed(taken.listing);
  }

  #listing(): PendingListing | null {
    const raw = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = ?`, LISTING_KEY).toArray()[0]?.value;
    const parsed = raw ? PendingListing.safeParse(JSON.parse(raw)) : undefined;
    return parsed?.success ? parsed.data : null;
  }
}
