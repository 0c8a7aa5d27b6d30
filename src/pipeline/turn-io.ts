import { errorText, log } from "../core/log";
import { factsSession, newerBookmark } from "../memory/bookmark";
import type { FactsCache, TurnFactsCache } from "../memory/facts-cache";
import type { PendingListing, PendingUsage } from "../thread/pending-bookkeeping";
import { touchStatement } from "../thread/thread-list";
import { pendingUsage, type UsageRecord, usageRowStatement } from "./usage";

/**
 * Where a run in its thread's object puts what it owes D1 after the answer: the object's pending
 * rows (src/thread/pending-bookkeeping.ts), sent in one batch for many turns.
 */
export type DeferredBookkeeping = {
  usage(u: PendingUsage): void;
  listed(l: PendingListing): void;
  /** The run is done: what it added leaves now, or with the object's next batch. */
  settle(): Promise<void>;
};

/**
 * One run's D1 traffic: facts are read through one Sessions API session started from the run's
 * bookmark (memory/bookmark.ts), served from the thread object's cache while fresh; the writes
 * owed after the answer (usage, the thread list) leave together as one batch when a run in the
 * Worker settles, or join the thread object's pending rows (`deferred`) for its next batch.
 */
export class TurnIO {
  readonly facts: D1DatabaseSession;
  /** The thread object's facts, as fresh as this run must read them (facts-cache.ts); none for a run in the Worker. */
  readonly factsCache: TurnFactsCache | undefined;
  readonly #db: D1Database;
  readonly #writes: { stmt: D1PreparedStatement; what: string }[] = [];
  readonly #after: Promise<unknown>[] = [];
  readonly #writers: D1DatabaseSession[] = [];

  readonly #deferred: DeferredBookkeeping | undefined;

  constructor(db: D1Database, bookmark: string | undefined, inObject: { cache?: FactsCache; deferred?: DeferredBookkeeping } = {}) {
    this.#db = db;
    this.facts = factsSession(db, bookmark);
    // A cached read is as fresh as the read session alone (a write on the primary says nothing of what the replica returned).
    this.factsCache = inObject.cache?.forRun(bookmark, () => this.facts.getBookmark() ?? undefined);
    this.#deferred = inObject.deferred;
  }

  /** Bills a run's (or a provider call's) usage to `tenant`. */
  bill(tenant: string, u: UsageRecord): void {
    const row = pendingUsage(tenant, u);
    if (this.#deferred) this.#deferred.usage(row);
    else this.#writes.push({ stmt: usageRowStatement(this.#db, row), what: "usage" });
  }

  /** Moves the thread's list entry to now (its first write is listed at once, by the thread room). */
  listed(tenant: string, threadId: string): void {
    const at = Date.now();
    if (this.#deferred) this.#deferred.listed({ tenant, threadId, at });
    else this.#writes.push({ stmt: touchStatement(this.#db, tenant, threadId, at), what: "thread-list" });
  }

  /** Work to finish before the run settles (never fails it: each promise logs its own failure). */
  readonly later = (p: Promise<unknown>): void => void this.#after.push(p.catch(() => undefined));

  /**
   * A session on the primary for facts the run writes (memory tools): its bookmark counts in bookmark(),
   * so the thread's next turn reads those writes wherever its reads are served.
   */
  writer(): D1DatabaseSession {
    const s = this.#db.withSession("first-primary");
    this.#writers.push(s);
    return s;
  }

  /** The newest point in D1's history the run's facts reads and writes have seen. */
  bookmark(): string | undefined {
    return newerBookmark(this.facts.getBookmark(), this.writtenBookmark());
  }

  /** The newest point the run's own writes reached (D1 issued it: the primary answered them). */
  writtenBookmark(): string | undefined {
    return this.#writers.reduce<string | undefined>((newest, s) => newerBookmark(newest, s.getBookmark()), undefined);
  }

  /** Sends the bookkeeping (one batch per round, or the object's) and waits for everything left behind, including work it starts. */
  async settle(): Promise<void> {
    while (this.#after.length > 0 || this.#writes.length > 0) {
      const batch = this.#writes.splice(0);
      if (batch.length > 0)
        this.#after.push(
          this.#db.batch(batch.map((w) => w.stmt)).catch((e: unknown) => log.error("bookkeeping", { writes: batch.map((w) => w.what), message: errorText(e) })),
        );
      await Promise.all(this.#after.splice(0));
    }
    await this.#deferred?.settle();
  }
}
