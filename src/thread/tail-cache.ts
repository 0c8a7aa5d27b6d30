import type { Message } from "../core/message";
import type { LoadRecentOptions, LoadRecentResult } from "./types";

/** One live message as the tail cache keeps it: decoded, with what its row stores beside the JSON. */
export type TailEntry = { message: Message; tokens: number; bytes: number; hash: string; role: string; cp: string | null };

/** How much of a thread's tail one object keeps decoded in memory. */
const MAX_ENTRIES = 4_096;
const MAX_BYTES = 8 * 1024 * 1024;

/**
 * The newest messages of a thread, decoded, oldest first — kept by its ThreadStore (the
 * thread's only writer) so that a turn's window and a resend's reconciliation read no rows
 * and decode nothing. It knows where it ends: `older` is the token estimate of the newest
 * message it does not hold (null when it holds the thread from the start). Appends extend
 * it; any other change to the messages drops it (the next read rebuilds it from storage).
 * Entries are frozen: callers share them, and nothing may edit a stored message in place.
 */
export class TailCache {
  private constructor(
    private readonly entries: TailEntry[],
    private older: number | null,
    private bytes: number,
  ) {}

  /** From rows read newest first; `older` as above. */
  static fromNewestFirst(newestFirst: TailEntry[], older: number | null): TailCache {
    const entries = newestFirst.reverse();
    for (const e of entries) deepFreeze(e.message);
    return new TailCache(
      entries,
      older,
      entries.reduce((n, e) => n + e.bytes, 0),
    );
  }

  get size(): number {
    return this.entries.length;
  }

  /** Whether it holds the thread from its first message. */
  get whole(): boolean {
    return this.older === null;
  }

  /** Its messages, newest first. */
  *newestFirst(): Generator<Message> {
    for (let i = this.entries.length - 1; i >= 0; i--) yield this.entries[i]!.message;
  }

  /** The window recent() would read from storage, or undefined when the cache cannot tell. */
  recent(maxTokens: number, opts: LoadRecentOptions): LoadRecentResult | undefined {
    const maxMessages = opts.maxMessages ?? Number.MAX_SAFE_INTEGER;
    let tokens = 0;
    let i = this.entries.length;
    while (i > 0) {
      const e = this.entries[i - 1]!;
      if (tokens + e.tokens > maxTokens || this.entries.length - i >= maxMessages) break;
      tokens += e.tokens;
      i--;
    }
    let truncated: boolean;
    if (i > 0) truncated = true;
    else if (this.older === null) truncated = false;
    else if (tokens + this.older > maxTokens || this.entries.length >= maxMessages) truncated = true;
    else return undefined; // the window reaches past what the cache holds
    return { messages: this.entries.slice(i).map((e) => e.message), tokens, truncated };
  }

  /** The newest `n` entries (all of them when the thread has fewer), or undefined when the cache holds fewer than that. */
  newest(n: number): readonly TailEntry[] | undefined {
    if (n > this.entries.length && this.older !== null) return undefined;
    return this.entries.slice(Math.max(0, this.entries.length - n));
  }

  /** Messages appended at the head, oldest first; the oldest entries go when the bounds are passed. */
  append(added: readonly TailEntry[]): void {
    for (const e of added) {
      deepFreeze(e.message);
      this.entries.push(e);
      this.bytes += e.bytes;
    }
    while (this.entries.length > 1 && (this.entries.length > MAX_ENTRIES || this.bytes > MAX_BYTES)) {
      const dropped = this.entries.shift()!;
      this.bytes -= dropped.bytes;
      this.older = dropped.tokens;
    }
  }

  /** Whether one more row read from storage still fits the cache's bounds. */
  static fits(count: number, bytes: number): boolean {
    return count <= MAX_ENTRIES && bytes <= MAX_BYTES;
  }
}

function deepFreeze(v: unknown): void {
  if (typeof v !== "object" || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const child of Object.values(v)) deepFreeze(child);
}
