import { z } from "@hono/zod-openapi";
import type { KeptMetaKey, ThreadMeta } from "./meta";

/**
 * What a thread's runs owe D1 after their answers — usage counters and the thread list's
 * updated_at — kept in the thread's own SQLite until the object sends them, one batch for many
 * turns (src/object/thread-object.ts flushes on an alarm). A turn's usage is stored in the same
 * storage commit as its save, so nothing is lost if the object goes away before the flush; a
 * failed send keeps its rows (sending_usage) and sends them again as they were.
 */
const usageTable = (name: "pending_usage" | "sending_usage") => `CREATE TABLE ${name} (
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

export const PENDING_BOOKKEEPING_DDL = usageTable("pending_usage");

/**
 * The rows of the send under way (v8): taken from pending_usage when a send starts and removed only once
 * D1 has them, so a send whose answer was lost, or an object reset while it waited, is sent again as it was.
 */
export const SENDING_BOOKKEEPING_DDL = usageTable("sending_usage");

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

/**
 * One send to D1: its rows, and who sends it with which number. `sender` names this incarnation of the
 * object (a delete's deleteAll makes a new one) and `seq` grows by one per send, so D1's
 * `bookkeeping_sends` row of the sender tells whether this send already landed.
 */
export type BookkeepingSend = { sender: string; seq: number; usage: PendingUsage[]; listing: PendingListing | null };

const LISTING_KEY: KeptMetaKey = "pending_listing";
const SENDING_KEY: KeptMetaKey = "sending_bookkeeping";
const SENDER_KEY: KeptMetaKey = "bookkeeping_sender";
const SEQ_KEY: KeptMetaKey = "bookkeeping_seq";
const SendingMeta = z.object({ seq: z.number().int(), listing: PendingListing.nullable() });
const COLUMNS = "tenant_id, day, model, cause, requests, estimated_requests, prompt_tokens, completion_tokens, cost";

const ADD_IN = `ON CONFLICT (tenant_id, day, model, cause) DO UPDATE SET
     requests = requests + excluded.requests,
     estimated_requests = estimated_requests + excluded.estimated_requests,
     prompt_tokens = prompt_tokens + excluded.prompt_tokens,
     completion_tokens = completion_tokens + excluded.completion_tokens,
     cost = cost + excluded.cost`;

/**
 * The upsert that adds a counter row into its day's row: one text for the object's `pending_usage`
 * and D1's `usage` (same columns), so the two can never add up differently.
 */
export const usageUpsertSql = (table: "usage" | "pending_usage"): string => `INSERT INTO ${table} (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ${ADD_IN}`;

/**
 * D1's usage upsert for one row of a send: the row's values, then the send's sender, seq and attempt.
 * It adds in only when this attempt is the one that moved the sender's `bookkeeping_sends` row to this
 * send (the batch's first statement), so a send that had landed already adds nothing again.
 */
export const sentUsageUpsertSql = `INSERT INTO usage (${COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?
   WHERE EXISTS (SELECT 1 FROM bookkeeping_sends WHERE sender = ? AND seq = ? AND attempt = ?) ${ADD_IN}`;

/** A row's values in usageUpsertSql's order. */
export const usageValues = (u: PendingUsage) =>
  [u.tenant_id, u.day, u.model, u.cause, u.requests, u.estimated_requests, u.prompt_tokens, u.completion_tokens, u.cost] as const;

/**
 * The object's pending bookkeeping, one capability: the two tables above are its own, its `meta` rows are kept through ThreadMeta.
 * Nothing else writes them, so what they hold is read once per opened object and then followed in memory,
 * each copy updated only after its statement ran: a turn adds its rows without reading any first.
 */
export class PendingBookkeeping {
  #listingHeld: { value: PendingListing | null } | undefined;
  #sendingHeld: { value: z.infer<typeof SendingMeta> | null } | undefined;
  #usageWaits: boolean | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly meta: ThreadMeta,
  ) {}

  /** Adds a provider call's (or a run's) usage into its day's counter row. */
  addUsage(u: PendingUsage): void {
    this.sql.exec(usageUpsertSql("pending_usage"), ...usageValues(u));
    this.#usageWaits = true;
  }

  /** The thread was written at `at`: its list entry moves to the newest such time. */
  listed(l: PendingListing): void {
    const held = this.#listing();
    if (held && held.at >= l.at) return;
    this.meta.setValue(LISTING_KEY, JSON.stringify(l));
    this.#listingHeld = { value: l };
  }

  /** Whether anything waits to be sent (a send under way included). */
  pending(): boolean {
    this.#usageWaits ??= this.sql.exec(`SELECT 1 FROM pending_usage LIMIT 1`).toArray().length > 0;
    return this.#sending() !== null || this.#usageWaits || this.#listing() !== null;
  }

  /**
   * The send to make now: the one under way when there is one (a try whose answer was lost, or the
   * object was reset while it waited: sent again with the same number), else everything pending as a
   * new send, moved aside in one synchronous step (a turn adding meanwhile starts new pending rows).
   * Null when nothing waits. The rows stay until landed() says D1 has them.
   */
  next(): BookkeepingSend | null {
    const held = this.#sending();
    if (held) return { sender: this.#sender(), seq: held.seq, usage: this.#rows("sending_usage"), listing: held.listing };
    const usage = this.#rows("pending_usage");
    const listing = this.#listing();
    if (usage.length === 0 && listing === null) return null;
    // Numbered in this object's storage: the sender's row in D1 takes only a send newer than the last that landed.
    const seq = Number(this.meta.value(SEQ_KEY) ?? 0) + 1;
    this.meta.setValue(SEQ_KEY, String(seq));
    this.sql.exec(`INSERT INTO sending_usage (${COLUMNS}) SELECT ${COLUMNS} FROM pending_usage`);
    this.sql.exec(`DELETE FROM pending_usage`);
    this.#usageWaits = false;
    this.meta.setValue(LISTING_KEY, null);
    this.#listingHeld = { value: null };
    this.meta.setValue(SENDING_KEY, JSON.stringify({ seq, listing }));
    this.#sendingHeld = { value: { seq, listing } };
    return { sender: this.#sender(), seq, usage, listing };
  }

  /** D1 has send `seq` (this try's or an earlier one's): its rows are done. */
  landed(seq: number): void {
    if (this.#sending()?.seq !== seq) return;
    this.sql.exec(`DELETE FROM sending_usage`);
    this.meta.setValue(SENDING_KEY, null);
    this.#sendingHeld = { value: null };
  }

  #rows(table: "pending_usage" | "sending_usage"): PendingUsage[] {
    return this.sql.exec<PendingUsage>(`SELECT ${COLUMNS} FROM ${table}`).toArray();
  }

  #sending(): z.infer<typeof SendingMeta> | null {
    this.#sendingHeld ??= { value: this.meta.json(SENDING_KEY, SendingMeta) };
    return this.#sendingHeld.value;
  }

  /** This incarnation's name in D1's bookkeeping_sends (made on its first send; a delete's deleteAll drops it, so a new thread starts anew). */
  #sender(): string {
    const held = this.meta.value(SENDER_KEY);
    if (held) return held;
    const made = crypto.randomUUID();
    this.meta.setValue(SENDER_KEY, made);
    return made;
  }

  #listing(): PendingListing | null {
    this.#listingHeld ??= { value: this.meta.json(LISTING_KEY, PendingListing) };
    return this.#listingHeld.value;
  }
}
