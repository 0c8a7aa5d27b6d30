import { z } from "@hono/zod-openapi";
import { estimateTokens } from "../core/tokens";
import type { ChatMessage, ChatResult } from "../providers/types";
import type { ModelConfig } from "../config/model-config";
import { tokensOf } from "./prompt";
import { type PendingUsage, usageUpsertSql, usageValues } from "../thread/pending-bookkeeping";

/** Per-tenant, per-day, per-model, per-cause usage counters in D1: one row per provider call is added in. */

/** What made a provider call: a turn (chat, invoke), a webhook delivery's turn, the summarization middleware, a summarize task, fact extraction, a paid embedding. */
export const UsageCause = z.enum(["turn", "webhook", "summarization", "summarize_task", "extraction", "embedding"]);
export type UsageCause = z.infer<typeof UsageCause>;

/** What one turn (or one provider call) used; `estimated` when a provider reported no usage. */
export type TurnUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost: number;
  estimated: boolean;
  /** Anthropic's prompt-cache counts (part of prompt_tokens), when the provider reported them. */
  cache?: { creation: number; read: number };
  /** Anthropic's server-tool counts (`web_search_requests`, …), when the provider reported them. */
  server_tool_use?: Record<string, number>;
};

/** `estimated_requests`: how many of `requests` had their tokens estimated (the provider reported none, e.g. a cut stream). */
export type UsageRecord = {
  model: string;
  cause: UsageCause;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  requests?: number;
  estimated_requests?: number;
};

/** One provider call's usage as a record to bill under `cause` (marked estimated when the provider reported none). */
export const callRecord = (model: string, cause: UsageCause, u: TurnUsage): UsageRecord => ({
  model,
  cause,
  prompt_tokens: u.prompt_tokens,
  completion_tokens: u.completion_tokens,
  cost: u.cost,
  requests: 1,
  estimated_requests: u.estimated ? 1 : 0,
});

export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export async function recordUsage(db: D1Database, tenant: string, u: UsageRecord, now = Date.now()): Promise<void> {
  await usageStatement(db, tenant, u, now).run();
}

/** The upsert that adds `u` to the tenant's counters (to run alone, or in a batch with other bookkeeping). */
export function usageStatement(db: D1Database, tenant: string, u: UsageRecord, now = Date.now()): D1PreparedStatement {
  return usageRowStatement(db, pendingUsage(tenant, u, now));
}

/** `u` as its day's counter row (what a thread object keeps until it sends it, src/thread/pending-bookkeeping.ts). */
export const pendingUsage = (tenant: string, u: UsageRecord, now = Date.now()): PendingUsage => ({
  tenant_id: tenant,
  day: utcDay(now),
  model: u.model,
  cause: u.cause,
  requests: u.requests ?? 1,
  estimated_requests: u.estimated_requests ?? 0,
  prompt_tokens: u.prompt_tokens,
  completion_tokens: u.completion_tokens,
  cost: u.cost,
});

/** The upsert that adds one counter row into D1's `usage`. */
export function usageRowStatement(db: D1Database, r: PendingUsage): D1PreparedStatement {
  return db.prepare(usageUpsertSql("usage")).bind(...usageValues(r));
}

export type UsageRow = {
  day: string;
  model: string;
  cause: UsageCause;
  requests: number;
  estimated_requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
};

export async function listUsage(db: D1Database, tenant: string, from: string, to: string): Promise<UsageRow[]> {
  const { results } = await db
    .prepare(
      `SELECT day, model, cause, requests, estimated_requests, prompt_tokens, completion_tokens, cost FROM usage
       WHERE tenant_id = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day, model, cause LIMIT 1000`,
    )
    .bind(tenant, from, to)
    .all<UsageRow>();
  return results;
}

/**
 * What `prompt` input and `completion` output tokens cost on `model`, in whole micro-USD (a price per 1,000
 * tokens times 1,000 is micro-USD per token). Rounded, so budgets add integers; never less for more tokens.
 */
export const microUsdOf = (model: Pick<ModelConfig, "input_cost_per_1k_tokens" | "output_cost_per_1k_tokens">, prompt: number, completion: number): number =>
  Math.round(prompt * model.input_cost_per_1k_tokens * 1000 + completion * model.output_cost_per_1k_tokens * 1000);

export const usdOfMicro = (micro: number): number => micro / 1_000_000;

export function usageOf(messages: ChatMessage[], model: ModelConfig, result: ChatResult): TurnUsage {
  const reported = result.usage;
  const prompt = reported?.prompt_tokens ?? tokensOf(messages);
  const completion =
    reported?.completion_tokens ?? estimateTokens({ role: "assistant", content: result.message.content, tool_calls: result.message.tool_calls });
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cost: usdOfMicro(microUsdOf(model, prompt, completion)),
    estimated: reported === undefined,
    ...(reported?.cache_creation_input_tokens !== undefined || reported?.cache_read_input_tokens !== undefined
      ? { cache: { creation: reported.cache_creation_input_tokens ?? 0, read: reported.cache_read_input_tokens ?? 0 } }
      : {}),
    ...(reported?.server_tool_use ? { server_tool_use: reported.server_tool_use } : {}),
  };
}

/** Server-tool counts added up per tool, over a run's calls. */
function addCounts(a: Record<string, number> | undefined, b: Record<string, number> | undefined): Record<string, number> | undefined {
  if (!a || !b) return a ?? b;
  const sum = { ...a };
  for (const [k, n] of Object.entries(b)) sum[k] = (sum[k] ?? 0) + n;
  return sum;
}

export function addUsage(a: TurnUsage, b: TurnUsage): TurnUsage {
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    cost: a.cost + b.cost,
    estimated: a.estimated || b.estimated,
    ...(a.cache || b.cache
      ? { cache: { creation: (a.cache?.creation ?? 0) + (b.cache?.creation ?? 0), read: (a.cache?.read ?? 0) + (b.cache?.read ?? 0) } }
      : {}),
    ...(a.server_tool_use || b.server_tool_use ? { server_tool_use: addCounts(a.server_tool_use, b.server_tool_use) } : {}),
  };
}
