/**
 * What the inspector reads from the API. Thread shapes come from the server's own zod
 * schemas (type-only imports: nothing of the server is bundled); the rest are declared
 * here because their schemas sit in modules that use worker-only types (D1, Env).
 */
export type { History, HistoryEntry, ThreadState, Write } from "../thread/types";
export type { Message } from "../core/message";

/** GET /v1/threads (src/thread/thread-list.ts ThreadList). */
export type ThreadList = {
  threads: { thread_id: string; created_at: number; updated_at: number; kind: "conversation" | "response"; expires_at: number | null }[];
  next_before: string | null;
};

/** POST /v1/memory/context (src/http/memory.ts LoadedContext). */
export type LoadedContext = { messages: import("../core/message").Message[]; tokens: number; dropped: { facts: number; turns: boolean } };

/** The `last_route` channel a run writes (src/pipeline/save-turn.ts): its routing summary and the scopes it loaded. */
export type LastRoute = {
  model: string;
  reason: string;
  candidate_count?: number;
  /** Written by older versions, which also stored the trace. */
  candidates?: string[];
  attempts?: unknown[];
  trace?: unknown;
  memory_scopes?: string[];
  /** Scopes the run loaded that the reading key cannot read: left out of memory_scopes, counted (src/http/memory-view.ts). */
  memory_scopes_hidden?: number;
  /** Which facts the run loaded and why (absent on checkpoints older than the inspector view). */
  memory?: StoredMemoryReport;
};

/** One entry of a run's memory report (src/memory/report.ts FactReport). */
export type FactReportRow = {
  id: string;
  scope: string;
  kind: string;
  key: string | null;
  tokens: number;
  loaded: boolean;
  reason: "fits" | "always" | "relevant" | "recent" | "didn't fit";
  score?: number;
  channels?: RankChannelsRow;
};
/** Where each channel ranked an item (src/memory/report.ts RankChannels); its `score` is their fusion. */
export type RankChannelsRow = { full_text?: { rank: number; score: number }; dense?: { rank: number; score: number } };
/** last_route.memory (src/pipeline/save-turn.ts): the response's report, its first entries only. */
export type StoredMemoryReport = {
  facts: FactReportRow[];
  dropped_facts: number;
  facts_omitted?: number;
  /** Entries of scopes the reading key cannot read: left out, counted (src/http/memory-view.ts). */
  facts_hidden?: number;
  recalled?: RecallReportRow[];
};
/** An earlier turn recall put before the recent window (src/memory/report.ts RecallReport): ids, never text. */
export type RecallReportRow = { id: string; tokens: number; reason: "match" | "neighbour"; score: number; channels?: RankChannelsRow };

/** One of GET /v1/usage's `budgets` (src/budgets/store.ts BudgetStanding): a budget and its current window. */
export type BudgetStanding = {
  id: string;
  kind: "tenant" | "key" | "thread" | "user";
  target: string | null;
  name: string | null;
  limit_usd: number;
  window: "day" | "week" | "month" | null;
  anchor: string;
  time_zone: string;
  thresholds: number[];
  spent_usd: number;
  reserved_usd: number;
  remaining_usd: number;
  window_start: string | null;
  resets_at: string | null;
  thresholds_reached: { threshold: number; event_id: string; at: string; spent_usd: number }[];
};
/** GET /v1/usage, the part the inspector shows. */
export type Usage = { budgets: BudgetStanding[] };

/** A serialized LangGraph value on the wire (src/langgraph/checkpoint-types.ts TypedWire). */
export type TypedValue = { t: string; b: string };
/** POST /v1/langgraph/threads/{id}/list → tuples (src/langgraph/checkpoint-routes.ts TupleWire). */
export type LangGraphTuple = {
  thread_id: string;
  ns: string;
  id: string;
  parent_id: string | null;
  checkpoint: TypedValue;
  metadata: TypedValue;
  blobs: { channel: string; value: TypedValue }[];
  writes: { task_id: string; channel: string; value: TypedValue }[];
};
