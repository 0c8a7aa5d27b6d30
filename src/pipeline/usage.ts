/** Per-tenant, per-day, per-model usage counters in D1. */
export type UsageRecord = { model: string; prompt_tokens: number; completion_tokens: number; cost: number };

export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export async function recordUsage(db: D1Database, tenant: string, u: UsageRecord, now = Date.now()): Promise<void> {
  await db
    .prepare(
      `INSERT INTO usage (tenant_id, day, model, requests, prompt_tokens, completion_tokens, cost)
       VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6)
       ON CONFLICT (tenant_id, day, model) DO UPDATE SET
         requests = requests + 1,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens,
         cost = cost + excluded.cost`,
    )
    .bind(tenant, utcDay(now), u.model, u.prompt_tokens, u.completion_tokens, u.cost)
    .run();
}

export type UsageRow = { day: string; model: string; requests: number; prompt_tokens: number; completion_tokens: number; cost: number };

export async function listUsage(db: D1Database, tenant: string, from: string, to: string): Promise<UsageRow[]> {
  const { results } = await db
    .prepare(
      `SELECT day, model, requests, prompt_tokens, completion_tokens, cost FROM usage
       WHERE tenant_id = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day, model LIMIT 1000`,
    )
    .bind(tenant, from, to)
    .all<UsageRow>();
  return results;
}

export const costOf = (tokens: number, costPer1k: number): number => (tokens * costPer1k) / 1000;
