import type { Message } from "../core/message";
import type { Fact } from "./facts";
import type { FactReport } from "./report";
import type { MemoryScope } from "./scope";

/** What a layer stores: turns (conversation messages) and facts (short rules/preferences). */
export type MemoryItem = { type: "turn"; message: Message } | { type: "fact"; kind: string; text: string };

/** A message with the token estimate stored when it was written. */
export type TokenedMessage = { message: Message; tokens: number };

/**
 * Token budgets for one layer load; an absent kind is not touched at all.
 * Facts come oldest-first while they fit `facts`, stopping at the first that does
 * not; turns are the NEWEST that fit `turns`, returned oldest→newest. So loading
 * costs O(what is kept). A budget of 0 returns nothing but still reports whether
 * anything was left out (facts counted, turns: whether any exist).
 */
/** How to choose among a scope's facts when they do not all fit. */
export type RankOptions = {
  /** The current input: facts sharing its words rank first (BM25). */
  query?: string;
  /** Kinds the agent marks `always`: loaded before anything else, in creation order. */
  alwaysKinds?: readonly string[];
};

export type LayerLimits = { facts?: number; turns?: number; rank?: RankOptions };

/** Why a fact was loaded when its scope did not fit whole (rank.ts); absent: the whole scope fit. */
export type FactWhy = { reason: "always" | "relevant" | "recent"; score?: number };
export type LoadedFact = Fact & { why?: FactWhy };

export type LayerLoad = {
  facts: LoadedFact[];
  /** Facts of this scope not returned because the budget ran out. */
  factsDropped: number;
  /** Some of those, examined and left out for their size (reported as "didn't fit"). */
  skipped?: Fact[];
  turns: TokenedMessage[];
  /** Older turns exist that were not returned. */
  turnsTruncated: boolean;
};

export interface MemoryBackend {
  loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad>;
  /** Stores a turn or a fact in the scope; returns the item's id. */
  appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string>;
  /** Removes a fact by id; false when there was none. */
  forget(id: string): Promise<boolean>;
}

/** Trims messages to a budget. `tokensOf` supplies stored estimates when the caller has them. */
export interface ContextStrategy {
  apply(messages: Message[], maxTokens: number, tokensOf?: (m: Message) => number): Message[];
}

export type { FactReport } from "./report";

/** What a model would see — the facts and the turns, kept apart — plus what had to be left out to fit. */
export type LoadedContext = {
  /** One system message per loaded fact, in priority order (layer, then creation or rank). */
  facts: Message[];
  /** The newest turns that fit what the facts left, oldest first. */
  turns: Message[];
  /** Stored estimates of both. */
  tokens: { facts: number; turns: number };
  /** Every loaded fact and the examined ones left out, in load order. */
  report: FactReport[];
  dropped: {
    /** Facts that did not fit the facts share (counted exactly; never silent). */
    facts: number;
    /** Whether older turns were left out (counting them would cost O(history)). */
    turns: boolean;
  };
};

export const emptyLayer = (): LayerLoad => ({ facts: [], factsDropped: 0, turns: [], turnsTruncated: false });
