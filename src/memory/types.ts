import type { Channel, Channels } from "../embed/fusion";
import type { Message } from "../core/message";
import type { RecallAsk, RecalledTurn } from "../thread/types";
import type { Fact } from "./facts";
import type { FactReport, RecallReport } from "./report";
import type { MemoryScope } from "./scope";

/** What a layer stores: turns (conversation messages) and facts (short rules/preferences). */
export type MemoryItem = { type: "turn"; message: Message } | { type: "fact"; kind: string; text: string };

/** A message with the token estimate stored when it was written. */
export type TokenedMessage = { message: Message; tokens: number };

/** Recall of earlier turns, per agent (models.yaml `recall`): share of the turn budget, turns either side of a match. */
export type RecallConfig = { share: number; neighbours: number; channels?: readonly Channel[] | undefined };

/** How to choose among a scope's facts when they do not all fit. */
export type RankOptions = {
  /** The current input: facts sharing its words rank first (BM25). */
  query?: string;
  /** Kinds the agent marks `always`: loaded before anything else, in creation order. */
  alwaysKinds?: readonly string[];
  /**
   * Turns: when the session does not fit, `share` of its budget goes to earlier turns relevant
   * to `query` (recall-excerpts.ts DEFAULT_RECALL when absent); false: the newest window only.
   */
  recall?: RecallConfig | false;
  /** What recall ranks turns by, when not `query` (a run's short input with the newest turns' words). */
  recallQuery?: string;
  /** At most this many tokens of turns, whatever the budget leaves (an agent's trim bounds its view). */
  turnTokens?: number;
  /** The channels that rank turns and facts (src/embed/fusion.ts); absent: all of them. */
  channels?: readonly Channel[];
};

/** `recall` (with turns): the session's object recalls earlier turns for its query (src/thread/recall.ts). */
export type LayerLimits = { facts?: number; turns?: number; rank?: RankOptions; recall?: RecallAsk };

/** Why a fact was loaded when its scope did not fit whole (rank.ts); absent: the whole scope fit. */
export type FactWhy = { reason: "always" | "relevant" | "recent"; score?: number; channels?: Channels };
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
  /** Earlier turns recalled (oldest first), all older than `turns`. */
  recalled?: RecalledTurn[];
  /** What the caller's answer should say about this load (recall by meaning was off). */
  warnings?: string[];
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

export type { FactReport, RecallReport } from "./report";

/** What a model would see — the facts and the turns, kept apart — plus what had to be left out to fit. */
export type LoadedContext = {
  /** The loaded facts as one system message per scope and kind (facts.ts factMessages), in priority order (layer, then creation or rank). */
  facts: Message[];
  /** The newest turns that fit what the facts left, oldest first. */
  turns: Message[];
  /** Stored estimates of both. */
  tokens: { facts: number; turns: number };
  /** Every loaded fact and the examined ones left out, in load order. */
  report: FactReport[];
  /** The earlier turns recall put in `turns` (as its first message, recall-excerpts.ts), oldest first. */
  recalled: RecallReport[];
  dropped: {
    /** Facts that did not fit the facts share (counted exactly; never silent). */
    facts: number;
    /** Whether older turns were left out (counting them would cost O(history)). */
    turns: boolean;
  };
  /** What the loads said (recall by meaning was off), once each. */
  warnings: string[];
};

export const emptyLayer = (): LayerLoad => ({ facts: [], factsDropped: 0, turns: [], turnsTruncated: false });
