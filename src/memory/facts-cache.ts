import { newerBookmark } from "./bookmark";
import type { Fact } from "./facts";

/**
 * How long a thread's object serves a scope's facts from what its last read returned. Replicas
 * already lag the primary by up to about a second (docs/concepts/where-a-turn-runs.md); this adds at most as much again for facts written without their bookmark.
 */
export const FACTS_CACHE_MS = 1_000;
/** Scopes one object keeps (a run loads a few; the cap only bounds memory): past it, the least recently used goes. */
const MAX_SCOPES = 64;

type Entry = { facts: readonly Fact[]; readAt: number; bookmark: string | undefined };

/** One run's view of its object's cache (d1-facts-backend.ts reads and fills it). */
export type TurnFactsCache = {
  /** The scope's live facts as last read, when that read is fresh enough for this run; else undefined. */
  get(owner: string, scope: string): readonly Fact[] | undefined;
  /** Keeps a read, issued at `readAt`, that returned the scope's every live fact (at the run's session bookmark). */
  put(owner: string, scope: string, facts: readonly Fact[], readAt: number): void;
  /** This run wrote facts (a memory tool): nothing read before it is served again. */
  clear(): void;
};

/**
 * A scope's facts as a thread's last D1 read returned them, kept in the thread's object so the
 * next turns need no D1 round trip. The rule: an entry serves a run only while it is younger than
 * FACTS_CACHE_MS **and** its read was at least as fresh as the bookmark the run must honour (the
 * thread's own, or a newer one the client sends back after a write), so a thread still never reads
 * facts older than its previous turn and a client still reads its own writes. Only scopes whose
 * live facts came whole in one read are kept (the first page; a larger scope, or one ranked because
 * it does not fit the budget, reads D1 every turn, through the same ranking as without the cache).
 * Expiry is applied again at every use, from the stored `expires_at`.
 */
export class FactsCache {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly maxAgeMs = FACTS_CACHE_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Makes `key` the most recently used entry (last in the Map's order), holding `e`. */
  #use(key: string, e: Entry): void {
    this.#entries.delete(key);
    this.#entries.set(key, e);
  }

  /** The view of one run that must read facts at least as fresh as `need`; `seen` is its session's bookmark after a read. */
  forRun(need: string | undefined, seen: () => string | undefined): TurnFactsCache {
    const keyOf = (owner: string, scope: string) => `${owner}\u0000${scope}`;
    return {
      get: (owner, scope) => {
        const e = this.#entries.get(keyOf(owner, scope));
        if (!e || this.clock() - e.readAt >= this.maxAgeMs) return undefined;
        // Fresh enough: the read saw at least what the run must see.
        if (need !== undefined && (e.bookmark === undefined || newerBookmark(e.bookmark, need) !== e.bookmark)) return undefined;
        this.#use(keyOf(owner, scope), e);
        return e.facts;
      },
      put: (owner, scope, facts, readAt) => {
        this.#use(keyOf(owner, scope), { facts, readAt, bookmark: seen() });
        // The Map iterates in insertion order, and #use re-inserts: the first key is the least recently used.
        const oldest = this.#entries.keys().next().value;
        if (this.#entries.size > MAX_SCOPES && oldest !== undefined) this.#entries.delete(oldest);
      },
      clear: () => this.#entries.clear(),
    };
  }
}
