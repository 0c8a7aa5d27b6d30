import { OPERATOR_TENANT } from "../core/principal";
import { AppError, type ErrorCode } from "../core/errors";

/**
 * Per-tenant quotas (wrangler [vars]): how many live keys, webhooks, threads and facts one
 * tenant may hold. D1 triggers keep `tenant_counts` in the same transaction as every write
 * (migrations/0008), so a check is one indexed row read, never a count over the tenant's rows.
 *
 * The operator's own system facts (tenant '') have no quota. A check runs before anything is written and answers 413 with the kind's own code: a quota
 * does not lift with time, so it is not a 429 (clients such as the openai SDK retry 429s on
 * their own, and a retry could never succeed); 413 is also what the per-thread caps answer
 * (BEM-034, BEM-097). Removing something (revoking a key, deleting a hook, thread or fact)
 * makes room at once. Concurrent creates may each pass the same check, so a burst can
 * overshoot by at most the number of creates in flight — except facts, whose write holds the
 * quota itself (factQuotaOf, D1FactsBackend.remember).
 */
export const QUOTAS = {
  keys: { variable: "MAX_KEYS_PER_TENANT", code: "BEM-015", fallback: 1_000, what: "live API keys" },
  webhooks: { variable: "MAX_WEBHOOKS_PER_TENANT", code: "BEM-016", fallback: 500, what: "webhooks" },
  threads: { variable: "MAX_THREADS_PER_TENANT", code: "BEM-017", fallback: 100_000, what: "threads" },
  /** One-off Responses calls' threads (thread-list.ts ThreadKind): they expire after 30 days, so they do not take conversations' room. */
  response_threads: { variable: "MAX_RESPONSE_THREADS_PER_TENANT", code: "BEM-017", fallback: 100_000, what: "one-off response threads" },
  facts: { variable: "MAX_FACTS_PER_TENANT", code: "BEM-018", fallback: 100_000, what: "facts" },
  store_items: { variable: "MAX_STORE_ITEMS_PER_TENANT", code: "BEM-121", fallback: 100_000, what: "LangGraph store items" },
  /** Bytes of the store items (namespace, key and JSON value; migration 0019): the shared D1 bounds them, not the count alone. */
  store_bytes: { variable: "MAX_STORE_BYTES_PER_TENANT", code: "BEM-190", fallback: 268_435_456, what: "bytes of LangGraph store items" },
} as const satisfies Record<string, { variable: keyof Env; code: ErrorCode; fallback: number; what: string }>;

export type QuotaKind = keyof typeof QUOTAS;

/** The configured cap; an unset or unreadable var means the documented default, never "unlimited". */
export function quotaOf(env: Env, kind: QuotaKind): number {
  const q = QUOTAS[kind];
  const raw = Number(env[q.variable]);
  return Number.isSafeInteger(raw) && raw >= 0 ? raw : q.fallback;
}

/** How many of `kind` the tenant holds now (one primary-key read). */
export async function countOf(db: D1Database, tenant: string, kind: QuotaKind): Promise<number> {
  const row = await db.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = ?").bind(tenant, kind).first<{ n: number }>();
  return row?.n ?? 0;
}

function quotaFull(kind: QuotaKind, held: number, max: number): AppError {
  const q = QUOTAS[kind];
  return new AppError(q.code, `This tenant holds ${held} ${q.what}; the limit is ${max} (${q.variable}). Remove some to make room.`);
}

/** Throws the kind's 413 when the tenant cannot take one more (`max`: the Worker's quota, when checked in a thread's object). */
export async function assertRoom(env: Env, tenant: string, kind: QuotaKind, max = quotaOf(env, kind)): Promise<void> {
  if (tenant === OPERATOR_TENANT) return; // the operator's system facts: not a tenant's, and the operator sets the quotas
  const held = await countOf(env.DB, tenant, kind);
  if (held + 1 > max) throw quotaFull(kind, held, max);
}

/**
 * A write to a thread that does not exist yet creates one: checked against the thread quota
 * (one D1 read that also says whether the thread is already listed). Existing threads always
 * take writes, so a tenant at its cap can keep talking on the threads it has.
 */
export async function assertThreadRoom(
  env: Env,
  tenant: string,
  threadId: string,
  max = quotaOf(env, "threads"),
  kind: "threads" | "response_threads" = "threads",
): Promise<void> {
  const row = await env.DB.prepare(
    "SELECT EXISTS (SELECT 1 FROM threads WHERE tenant_id = ?1 AND thread_id = ?2) AS known, " +
      "(SELECT n FROM tenant_counts WHERE tenant_id = ?1 AND kind = ?3) AS held",
  )
    .bind(tenant, threadId, kind)
    .first<{ known: number; held: number | null }>();
  const held = row?.held ?? 0;
  if (row?.known !== 1 && held + 1 > max) throw quotaFull(kind, held, max);
}

/** The tenant's fact quota to hold in the write itself (D1FactsBackend.remember), or none (the operator's system facts). */
export const factQuotaOf = (env: Env, tenant: string): number | undefined => (tenant === OPERATOR_TENANT ? undefined : quotaOf(env, "facts"));

/** A fact remembered under a key the scope already holds replaces it (no new row): only a new fact needs room. */
export async function assertFactRoom<S>(
  env: Env,
  tenant: string,
  facts: { getByKey(scope: S, key: string): Promise<unknown> },
  scope: S,
  key: string | null | undefined,
): Promise<void> {
  if (key != null && (await facts.getByKey(scope, key)) !== null) return;
  await assertRoom(env, tenant, "facts");
}
