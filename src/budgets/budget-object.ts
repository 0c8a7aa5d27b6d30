import { DurableObject } from "cloudflare:workers";
import { spanAt, type Config, type Span, type Terms } from "./window";

/** A hold no one settled (its worker died mid-call) is charged whole after this long: longer than any provider call may run. */
export const STALE_HOLD_MS = 15 * 60_000;

/** A soft threshold the window reached: recorded once, with the id its event is sent under. */
export type Alert = { event: string; threshold: number; at: number; spent_micro: number; limit_micro: number } & Span;
/** `hold: null`: the object holds no budget (deleted): nothing to reserve against. A refusal reaches the 100% threshold. */
export type Reserved =
  | { ok: true; hold: string | null }
  | { ok: false; remaining_micro: number; limit_micro: number; resets_at: number | null; alerts: Alert[] };
export type Standing = { limit_micro: number; spent_micro: number; reserved_micro: number; remaining_micro: number; alerts: Alert[] } & Span;

/**
 * One budget's counter: the spend and the in-flight reservations of each window. A Durable Object runs one
 * call at a time and its SQL is synchronous, so a check and its reservation cannot interleave with another's:
 * the cap holds under any concurrency. A hold is charged to the window it was reserved in. The object keeps
 * its budget's terms itself, so a changed limit applies to the next call at once.
 */
export class BudgetDO extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.schema();
  }

  private schema(): void {
    this.sql.exec(
      `CREATE TABLE IF NOT EXISTS windows (start INTEGER PRIMARY KEY, spent INTEGER NOT NULL DEFAULT 0, reserved INTEGER NOT NULL DEFAULT 0);
       CREATE TABLE IF NOT EXISTS holds (id TEXT PRIMARY KEY, start INTEGER NOT NULL, amount INTEGER NOT NULL, at INTEGER NOT NULL);
       CREATE TABLE IF NOT EXISTS terms (k INTEGER PRIMARY KEY CHECK (k = 1), limit_micro INTEGER NOT NULL, window TEXT, anchor_ms INTEGER NOT NULL, time_zone TEXT NOT NULL);
       CREATE TABLE IF NOT EXISTS thresholds (fraction REAL PRIMARY KEY);
       CREATE TABLE IF NOT EXISTS alerts (start INTEGER NOT NULL, threshold REAL NOT NULL, event TEXT NOT NULL, at INTEGER NOT NULL, spent INTEGER NOT NULL, PRIMARY KEY (start, threshold));`,
    );
  }

  /** Sets the budget's terms and thresholds (on create and on every change); a new window, anchor or time zone counts afresh. */
  configure(t: Config): void {
    const old = this.terms();
    // Windows are keyed by their start, and a budget that never resets always starts at 0: its spend would carry over.
    if (old && (old.window !== t.window || old.anchor_ms !== t.anchor_ms || old.time_zone !== t.time_zone))
      this.sql.exec("DELETE FROM windows; DELETE FROM holds; DELETE FROM alerts;");
    this.sql.exec("DELETE FROM thresholds");
    for (const f of t.thresholds) this.sql.exec("INSERT INTO thresholds (fraction) VALUES (?1)", f);
    this.sql.exec(
      "INSERT OR REPLACE INTO terms (k, limit_micro, window, anchor_ms, time_zone) VALUES (1, ?1, ?2, ?3, ?4)",
      t.limit_micro,
      t.window,
      t.anchor_ms,
      t.time_zone,
    );
  }

  /** Reserves `amount` micro-USD if the window has room for it beside what is spent and reserved. */
  reserve(amount: number): Reserved {
    const terms = this.terms();
    if (!terms) return { ok: true, hold: null };
    const span = this.current(terms);
    const w = this.row(span.start);
    const remaining = terms.limit_micro - w.spent - w.reserved;
    if (amount > remaining)
      return {
        ok: false,
        remaining_micro: Math.max(0, terms.limit_micro - w.spent),
        limit_micro: terms.limit_micro,
        resets_at: span.resets_at,
        alerts: this.reach(terms, span, w.spent, 1),
      };
    const hold = crypto.randomUUID();
    this.sql.exec("UPDATE windows SET reserved = reserved + ?1 WHERE start = ?2", amount, span.start);
    this.sql.exec("INSERT INTO holds (id, start, amount, at) VALUES (?1, ?2, ?3, ?4)", hold, span.start, amount, Date.now());
    return { ok: true, hold };
  }

  /**
   * Ends a hold: `spent` micro-USD are charged to its window and the rest of its reservation is released. Settling
   * twice charges once. Answers the thresholds this spend reached first in that window: their events to send.
   */
  settle(hold: string, spent: number): Alert[] {
    const h = this.sql.exec<{ start: number; amount: number }>("SELECT start, amount FROM holds WHERE id = ?1", hold).toArray()[0];
    if (!h) return [];
    this.charge(hold, h.start, h.amount, spent);
    const terms = this.terms();
    if (!terms) return [];
    const span = { ...spanAt(terms, h.start), start: h.start };
    const total = this.row(h.start).spent;
    return this.reach(terms, span, total, total / terms.limit_micro);
  }

  /** Records each threshold at or under `fraction` not yet reached in the window (once: the window and threshold are the key). */
  private reach(terms: Terms, span: Span, spent: number, fraction: number): Alert[] {
    const at = Date.now();
    return this.sql
      .exec<{ fraction: number }>(
        "SELECT fraction FROM thresholds WHERE fraction <= ?1 AND fraction NOT IN (SELECT threshold FROM alerts WHERE start = ?2) ORDER BY fraction",
        fraction,
        span.start,
      )
      .toArray()
      .map(({ fraction: threshold }) => {
        const event = `bev_${crypto.randomUUID().replaceAll("-", "")}`;
        this.sql.exec("INSERT INTO alerts (start, threshold, event, at, spent) VALUES (?1, ?2, ?3, ?4, ?5)", span.start, threshold, event, at, spent);
        return { event, threshold, at, spent_micro: spent, limit_micro: terms.limit_micro, ...span };
      });
  }

  /** What the budget has spent and holds in its current window (null: no budget here). */
  standing(): Standing | null {
    const terms = this.terms();
    if (!terms) return null;
    const span = this.current(terms);
    const w = this.row(span.start);
    return {
      ...span,
      limit_micro: terms.limit_micro,
      spent_micro: w.spent,
      reserved_micro: w.reserved,
      remaining_micro: Math.max(0, terms.limit_micro - w.spent - w.reserved),
      alerts: this.sql
        .exec<{ event: string; threshold: number; at: number; spent: number }>(
          "SELECT event, threshold, at, spent FROM alerts WHERE start = ?1 ORDER BY threshold",
          span.start,
        )
        .toArray()
        .map((a) => ({ event: a.event, threshold: a.threshold, at: a.at, spent_micro: a.spent, limit_micro: terms.limit_micro, ...span })),
    };
  }

  /** The budget was deleted: its counters go with it. */
  async wipe(): Promise<void> {
    await this.ctx.storage.deleteAll();
    // A turn that still lists the budget (its isolate's cache) may ask once more: it finds no terms.
    this.schema();
  }

  private terms(): Terms | null {
    return this.sql.exec<Terms>("SELECT limit_micro, window, anchor_ms, time_zone FROM terms").toArray()[0] ?? null;
  }

  private charge(hold: string, start: number, amount: number, spent: number): void {
    this.sql.exec("UPDATE windows SET reserved = reserved - ?1, spent = spent + ?2 WHERE start = ?3", amount, spent, start);
    this.sql.exec("DELETE FROM holds WHERE id = ?1", hold);
  }

  /** The window now falls in; stale holds charged whole, and past windows without holds forgotten. */
  private current(terms: Terms): Span {
    const now = Date.now();
    const span = spanAt(terms, now);
    for (const h of this.sql.exec<{ id: string; start: number; amount: number }>("SELECT id, start, amount FROM holds WHERE at < ?1", now - STALE_HOLD_MS))
      this.charge(h.id, h.start, h.amount, h.amount);
    this.sql.exec("DELETE FROM windows WHERE start < ?1 AND start NOT IN (SELECT start FROM holds)", span.start);
    this.sql.exec("DELETE FROM alerts WHERE start < ?1 AND start NOT IN (SELECT start FROM holds)", span.start);
    return span;
  }

  private row(start: number): { spent: number; reserved: number } {
    this.sql.exec("INSERT OR IGNORE INTO windows (start) VALUES (?1)", start);
    return this.sql.exec<{ spent: number; reserved: number }>("SELECT spent, reserved FROM windows WHERE start = ?1", start).one();
  }
}
