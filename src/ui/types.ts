/**
 * What the inspector reads from the API. Thread shapes come from the server's own zod
 * schemas (type-only imports: nothing of the server is bundled); the rest are declared
 * here because their schemas sit in modules that use worker-only types (D1, Env).
 */
export type { History, HistoryEntry, ThreadState, Write } from "../thread/types";
export type { Message } from "../thread/message";

/** GET /v1/threads (src/thread/registry.ts ThreadList). */
export type ThreadList = { threads: { thread_id: string; created_at: number; updated_at: number }[]; next_before: string | null };

/** POST /v1/memory/context (src/http/memory.ts LoadedContext). */
export type LoadedContext = { messages: import("../thread/message").Message[]; tokens: number; dropped: { facts: number; turns: boolean } };

/** The `last_route` channel a run writes (src/pipeline/save-run.ts): its routing summary and the scopes it loaded. */
export type LastRoute = {
  model: string;
  reason: string;
  candidate_count?: number;
  /** Written by older versions, which also stored the trace. */
  candidates?: string[];
  attempts?: unknown[];
  trace?: unknown;
  memory_scopes?: string[];
};
