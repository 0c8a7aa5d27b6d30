import { errorText, log } from "../core/log";
import { factsSession } from "../memory/bookmark";
import type { FactsCache, RunFactsCache } from "../memory/facts-cache";

/** Takes a D1 write to make after the answer (`what` names it in a log line if it fails). */
export type Bookkeeping = (write: D1PreparedStatement, what: string) => void;

/**
 * One run's D1 traffic, the same wherever the run executes: facts are read through one
 * Sessions API session started from the run's bookmark (memory/bookmark.ts), and the writes
 * made after the answer (usage, the thread list) leave together as one batch when the run
 * settles, with any other work it left behind (`later`).
 */
export class RunIO {
  readonly facts: D1DatabaseSession;
  /** The thread object's facts, as fresh as this run must read them (facts-cache.ts); none for a run in the Worker. */
  readonly factsCache: RunFactsCache | undefined;
  readonly #db: D1Database;
  readonly #writes: { stmt: D1PreparedStatement; what: string }[] = [];
  readonly #after: Promise<unknown>[] = [];

  constructor(db: D1Database, bookmark: string | undefined, cache?: FactsCache) {
    this.#db = db;
    this.facts = factsSession(db, bookmark);
    this.factsCache = cache?.forRun(bookmark, () => this.bookmark());
  }

  readonly bookkeeping: Bookkeeping = (stmt, what) => void this.#writes.push({ stmt, what });

  /** Work to finish before the run settles (never fails it: each promise logs its own failure). */
  readonly later = (p: Promise<unknown>): void => void this.#after.push(p.catch(() => undefined));

  /** The newest point in D1's history the run's facts reads have seen. */
  bookmark(): string | undefined {
    return this.facts.getBookmark() ?? undefined;
  }

  /** Sends the bookkeeping (one batch per round) and waits for everything left behind, including work it starts. */
  async settle(): Promise<void> {
    while (this.#after.length > 0 || this.#writes.length > 0) {
      const batch = this.#writes.splice(0);
      if (batch.length > 0)
        this.#after.push(
          this.#db.batch(batch.map((w) => w.stmt)).catch((e: unknown) => log.error("bookkeeping", { writes: batch.map((w) => w.what), message: errorText(e) })),
        );
      await Promise.all(this.#after.splice(0));
    }
  }
}
