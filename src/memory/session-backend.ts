import { AppError } from "../core/errors";
import type { MessageInput } from "../core/message";
import { estimateTokens, type TokenEstimator } from "../core/tokens";
import type { LoadRecentResult, RecallAsk } from "../thread/types";
import type { MemoryScope } from "./scope";
import { emptyLayer, type LayerLimits, type LayerLoad, type MemoryBackend, type MemoryItem } from "./types";

/** What the session backend needs from a thread; ThreadClient (src/thread/client.ts) satisfies it. */
export interface SessionThread {
  /** With `recall`, the object also recalls earlier turns for its query (src/thread/recall.ts). */
  loadRecent(maxTokens: number, opts?: { recall?: RecallAsk }): Promise<LoadRecentResult>;
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
    const recent = await this.thread(scope).loadRecent(Math.max(0, limits.turns), limits.recall ? { recall: limits.recall } : {});
    // The object stores the same estimate per message at write time; recomputing it here
    // keeps per-message accounting without widening the RPC payload.
    out.turns = recent.messages.map((message) => ({ message, tokens: this.estimate(message) }));
    out.turnsTruncated = recent.truncated;
    if (recent.recalled?.length) out.recalled = recent.recalled;
    if (recent.warning !== undefined) out.warnings = [recent.warning];
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
