import { AppError } from "../core/errors";
import type { Message, MessageInput } from "../core/message";
import { estimateTokens, type TokenEstimator } from "../core/tokens";
import type { MemoryScope } from "./scope";
import { emptyLayer, type LayerLimits, type LayerLoad, type MemoryBackend, type MemoryItem } from "./types";

/** What the session backend needs from a thread; ThreadClient (src/thread/client.ts) satisfies it. */
export interface SessionThread {
  loadRecent(maxTokens: number): Promise<{ messages: Message[]; tokens: number; truncated: boolean }>;
  appendMessages(messages: MessageInput[], source: "input" | "loop" | "update"): Promise<unknown>;
}

/**
 * Turns of `session:<thread>` scopes: they live in the thread's Durable Object, whose
 * loadRecent is a reverse index scan reading only what it returns. `open` must bind
 * the thread to the caller's tenant (tenant + thread id names the object).
 */
export class SessionBackend implements MemoryBackend {
  constructor(
    private readonly open: (threadId: string) => SessionThread,
    private readonly estimate: TokenEstimator = estimateTokens,
  ) {}

  private thread(scope: MemoryScope): SessionThread {
    if (!scope.isSession || scope.id === undefined) {
      throw new AppError("BEM-001", undefined, { internal: `SessionBackend got non-session scope ${scope.name}` });
    }
    return this.open(scope.id);
  }

  async loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad> {
    const out = emptyLayer();
    if (limits.turns === undefined) return out;
    const recent = await this.thread(scope).loadRecent(Math.max(0, limits.turns));
    // The object stores the same estimate per message at write time; recomputing it here
    // keeps per-message accounting without widening the RPC payload.
    out.turns = recent.messages.map((message) => ({ message, tokens: this.estimate(message) }));
    out.turnsTruncated = recent.truncated;
    return out;
  }

  async appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string> {
    if (item.type !== "turn") throw new AppError("BEM-001", undefined, { internal: "SessionBackend stores turns only" });
    await this.thread(scope).appendMessages([item.message], "input");
    return item.message.id;
  }

  /** Session messages are removed through the thread (remove op), not by a bare id. */
  async forget(): Promise<boolean> {
    return false;
  }
}

/**
 * A session thread whose newest window was already read under the run's lease
 * (in the same round trip that acquired it, with the run's whole `budget`):
 * loadRecent cuts it the way the object would — newest first, stopping at the
 * first message that does not fit — so a smaller budget costs no second call.
 * Only a larger budget over a truncated window goes back to the thread.
 */
export function preloadedSession(
  window: () => Promise<{ messages: Message[]; tokens: number; truncated: boolean }>,
  budget: number,
  thread: SessionThread,
  estimate: TokenEstimator = estimateTokens,
): SessionThread {
  return {
    async loadRecent(maxTokens) {
      const w = await window();
      if (maxTokens >= budget) return w.truncated && maxTokens > budget ? thread.loadRecent(maxTokens) : w;
      let start = w.messages.length;
      let tokens = 0;
      while (start > 0) {
        const t = estimate(w.messages[start - 1]!);
        if (tokens + t > maxTokens) break;
        tokens += t;
        start--;
      }
      return { messages: w.messages.slice(start), tokens, truncated: start > 0 || w.truncated };
    },
    appendMessages: (messages, source) => thread.appendMessages(messages, source),
  };
}
