import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { randomHex } from "../core/encoding";
import { parseThreadId } from "../thread/thread-id";
import { BudgetWindow, type Config, isTimeZone } from "./window";
import type { Standing } from "./budget-object";
import { allowPrivateCallbacks, callbackUrlProblem } from "../webhooks/callback-url";
import { checkTagTarget } from "./tags";

/**
 * What a budget caps: the whole tenant, one API key, one thread, one end user (the `user` a request names), or
 * one metadata value a request sends (`key=value`, the key declared in models.yaml).
 */
export const BudgetKind = z.enum(["tenant", "key", "thread", "user", "metadata"]);
export type BudgetKind = z.infer<typeof BudgetKind>;

/** A tenant's budgets are few (each turn asks every one that applies to it). */
export const MAX_BUDGETS_PER_TENANT = 100;

/** USD, at most $1,000,000, in whole micro-USD above zero (a cap of 0 is a disabled key: revoke it). */
const LimitUsd = z
  .number()
  .finite()
  .min(0.000001)
  .max(1_000_000)
  .openapi({ description: "The cap in USD (whole micro-USD, $0.000001 to $1,000,000)", example: 25 });
const TimeZone = z
  .string()
  .max(64)
  .refine(isTimeZone, "not an IANA time zone the runtime knows (e.g. UTC, Europe/Paris)")
  .openapi({ description: "IANA time zone the windows are counted in", example: "Europe/Paris" });
const Anchor = z.iso.datetime({ offset: true }).openapi({
  description: "When the first window starts (ISO 8601 with offset); each next one starts a day, week or calendar month later on the time zone's clock",
  example: "2026-12-01T00:00:00+01:00",
});

const Thresholds = z
  .array(z.number().finite().gt(0).max(1))
  .max(10)
  .refine((t) => new Set(t).size === t.length, "each threshold once")
  .openapi({ description: "Fractions of the limit (0 < f <= 1), each sending a signed event once per window when reached", example: [0.5, 0.8, 1] });
const AlertUrl = z
  .string()
  .max(2048)
  .openapi({ description: "Where threshold events are POSTed (https, a public host)", example: "https://ops.example.com/budget-alerts" });

export const Budget = z
  .object({
    id: z.string(),
    kind: BudgetKind,
    target: z.string().nullable().openapi({
      description: "The key id (kind key), thread id (kind thread), end user (kind user) or `key=value` (kind metadata); null for a tenant budget",
    }),
    limit_usd: z.number(),
    window: BudgetWindow.nullable().openapi({ description: "day, week or month; null: the budget never resets" }),
    anchor: z.string().openapi({ description: "When the windows are counted from (ISO 8601, UTC)" }),
    time_zone: z.string(),
    name: z.string().nullable(),
    thresholds: z.array(z.number()),
    alert_url: z
      .string()
      .nullable()
      .openapi({ description: "Where threshold events go; in /v1/usage, null to a key that may not manage budgets (it may carry a token)" }),
    created_at: z.number().int(),
    updated_at: z.number().int(),
  })
  .openapi("Budget");
export type Budget = z.infer<typeof Budget>;

export const CreateBudget = z
  .strictObject({
    kind: BudgetKind,
    target: z.string().max(128).optional().openapi({
      description:
        "Required for kind key (a key id of the tenant), thread (a thread id), user (the end user: OpenAI's `user`, Anthropic's `metadata.user_id`) and metadata (`key=value`, the key one of models.yaml `budget_metadata_keys`); absent for tenant",
    }),
    limit_usd: LimitUsd,
    window: BudgetWindow.nullable().default(null),
    anchor: Anchor.optional().openapi({ description: "Default: now. Not in the future, nor before 2000-01-01T00:00:00Z" }),
    time_zone: TimeZone.default("UTC"),
    name: z.string().max(200).optional(),
    thresholds: Thresholds.default([]),
    alert_url: AlertUrl.optional(),
  })
  .openapi("CreateBudget");

/** Changing the window, anchor or time zone starts counting afresh; a new limit applies to the window's spend so far. */
export const PatchBudget = z
  .strictObject({
    limit_usd: LimitUsd.optional(),
    window: BudgetWindow.nullable().optional(),
    anchor: Anchor.optional(),
    time_zone: TimeZone.optional(),
    name: z.string().max(200).nullable().optional(),
    thresholds: Thresholds.optional(),
    alert_url: AlertUrl.nullable().optional(),
  })
  .openapi("PatchBudget");

type Row = {
  id: string;
  kind: BudgetKind;
  target: string;
  limit_micro: number;
  window: BudgetWindow | null;
  anchor_ms: number;
  time_zone: string;
  name: string | null;
  /** JSON array of fractions. */
  thresholds: string;
  alert_url: string | null;
  alert_secret: string | null;
  created_at: number;
  updated_at: number;
};
export type BudgetRow = Row;

const COLUMNS = "id, kind, target, limit_micro, window, anchor_ms, time_zone, name, thresholds, alert_url, alert_secret, created_at, updated_at";

export const toMicro = (usd: number): number => Math.round(usd * 1_000_000);
const fractions = z.array(z.number());
export const thresholdsOf = (r: Pick<Row, "thresholds">): number[] => fractions.parse(JSON.parse(r.thresholds));
export const configOf = (r: Row): Config => ({
  limit_micro: r.limit_micro,
  window: r.window,
  anchor_ms: r.anchor_ms,
  time_zone: r.time_zone,
  thresholds: thresholdsOf(r),
});

export const budgetOf = (r: Row): Budget => ({
  id: r.id,
  kind: r.kind,
  target: r.kind === "tenant" ? null : r.target,
  limit_usd: r.limit_micro / 1_000_000,
  window: r.window,
  anchor: new Date(r.anchor_ms).toISOString(),
  time_zone: r.time_zone,
  name: r.name,
  thresholds: thresholdsOf(r),
  alert_url: r.alert_url,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** A threshold the current window reached, and the id of the event sent for it. */
const ReachedThreshold = z.object({ threshold: z.number(), event_id: z.string(), at: z.string(), spent_usd: z.number() }).openapi("ReachedThreshold");

/** A budget with where its current window stands (its object's count). */
export const BudgetStanding = Budget.extend({
  spent_usd: z.number(),
  reserved_usd: z.number().openapi({ description: "Held by model calls in flight (the most each can cost)" }),
  remaining_usd: z.number(),
  window_start: z.string().nullable(),
  resets_at: z.string().nullable(),
  thresholds_reached: z.array(ReachedThreshold).openapi({ description: "The thresholds this window reached, each once, oldest first" }),
}).openapi("BudgetStanding");
export type BudgetStanding = z.infer<typeof BudgetStanding>;

export const standingOf = (r: Row, s: Standing): BudgetStanding => ({
  ...budgetOf(r),
  limit_usd: s.limit_micro / 1_000_000,
  spent_usd: s.spent_micro / 1_000_000,
  reserved_usd: s.reserved_micro / 1_000_000,
  remaining_usd: s.remaining_micro / 1_000_000,
  window_start: r.window === null ? null : new Date(s.start).toISOString(),
  resets_at: s.resets_at === null ? null : new Date(s.resets_at).toISOString(),
  thresholds_reached: s.alerts.map((a) => ({
    threshold: a.threshold,
    event_id: a.event,
    at: new Date(a.at).toISOString(),
    spent_usd: a.spent_micro / 1_000_000,
  })),
});

/** Every reserve counts windows from the anchor, so an older one would cost each call CPU in proportion to its age. */
const EARLIEST_ANCHOR = "2000-01-01T00:00:00Z";

/** An anchor given by the client: now or earlier (a future one would count nothing until then), from 2000 on. */
function anchorMs(iso: string | undefined, now: number): number {
  if (iso === undefined) return now;
  const ms = Date.parse(iso);
  if (ms > now) throw new AppError("BEM-011", `anchor ${iso} is in the future: give the start of a window that has begun`);
  if (ms < Date.parse(EARLIEST_ANCHOR)) throw new AppError("BEM-011", `anchor ${iso} is before ${EARLIEST_ANCHOR}: give a recent window start`);
  return ms;
}

/** The target must be what the kind says, in this tenant: a live key of it, or a valid thread id. */
async function checkTarget(db: D1Database, tenant: string, kind: BudgetKind, target: string | undefined): Promise<void> {
  if ((kind === "tenant") !== (target === undefined))
    throw new AppError("BEM-011", kind === "tenant" ? "target: a tenant budget names no target" : `target: required for a ${kind} budget`);
  if (kind === "thread") parseThreadId(target);
  if (kind === "user" && target === "") throw new AppError("BEM-011", "target: the end user's id, as requests send it in `user`");
  if (kind === "metadata" && target !== undefined) checkTagTarget(target);
  if (kind === "key") {
    const key = await db.prepare("SELECT 1 AS ok FROM api_keys WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL").bind(tenant, target).first();
    if (!key) throw new AppError("BEM-052", `target: '${target}' is no live API key of this tenant`);
  }
}

const tooMany = () => new AppError("BEM-232", `The tenant holds ${MAX_BUDGETS_PER_TENANT} budgets, the most it may; delete one first`);

/** Thresholds send to an alert URL, and an alert URL serves thresholds: one without the other would do nothing. */
function checkAlerts(env: Env, thresholds: number[], url: string | null): void {
  if (thresholds.length > 0 !== (url !== null))
    throw new AppError(
      "BEM-011",
      thresholds.length > 0 ? "alert_url: required with thresholds (where their events go)" : "alert_url: give thresholds for it to serve",
    );
  const problem = url === null ? null : callbackUrlProblem(url, allowPrivateCallbacks(env));
  if (problem) throw new AppError("BEM-094", `alert_url ${problem}`);
}

/** A new budget, checked (nothing written yet: its object takes its terms first, src/http/budgets.ts). */
export async function newBudget(env: Env, tenant: string, input: z.infer<typeof CreateBudget>, now = Date.now()): Promise<Row> {
  const db = env.DB;
  checkAlerts(env, input.thresholds, input.alert_url ?? null);
  await checkTarget(db, tenant, input.kind, input.target);
  const count = await db.prepare("SELECT COUNT(*) AS n FROM budgets WHERE tenant_id = ?").bind(tenant).first<{ n: number }>();
  if ((count?.n ?? 0) >= MAX_BUDGETS_PER_TENANT) throw tooMany();
  return {
    id: `bud_${randomHex(12)}`,
    kind: input.kind,
    target: input.target ?? "",
    limit_micro: toMicro(input.limit_usd),
    window: input.window,
    anchor_ms: anchorMs(input.anchor, now),
    time_zone: input.time_zone,
    name: input.name ?? null,
    thresholds: JSON.stringify([...input.thresholds].sort((a, b) => a - b)),
    alert_url: input.alert_url ?? null,
    alert_secret: input.alert_url ? `bsec_${randomHex(32)}` : null,
    created_at: now,
    updated_at: now,
  };
}

/** Inserts the budget if the tenant has room: the count is checked in the insert itself, so concurrent creates cannot pass it together. */
export async function insertBudget(db: D1Database, tenant: string, row: Row): Promise<void> {
  const { meta } = await db
    .prepare(
      `INSERT INTO budgets (tenant_id, ${COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM budgets WHERE tenant_id = ?) < ?`,
    )
    .bind(
      tenant,
      row.id,
      row.kind,
      row.target,
      row.limit_micro,
      row.window,
      row.anchor_ms,
      row.time_zone,
      row.name,
      row.thresholds,
      row.alert_url,
      row.alert_secret,
      row.created_at,
      row.updated_at,
      tenant,
      MAX_BUDGETS_PER_TENANT,
    )
    .run();
  if (meta.changes === 0) throw tooMany();
  forgetBudgets(tenant);
}

export async function getBudget(db: D1Database, tenant: string, id: string): Promise<Row> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM budgets WHERE tenant_id = ? AND id = ?`).bind(tenant, id).first<Row>();
  if (!row) throw new AppError("BEM-231", `Budget '${id}' not found in this tenant`);
  return row;
}

export async function listBudgets(db: D1Database, tenant: string): Promise<Row[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS} FROM budgets WHERE tenant_id = ? ORDER BY created_at, id LIMIT ?`)
    .bind(tenant, MAX_BUDGETS_PER_TENANT)
    .all<Row>();
  return results;
}

/** The budget as `p` changes it (nothing written yet). */
export async function patchedBudget(env: Env, tenant: string, id: string, p: z.infer<typeof PatchBudget>, now = Date.now()): Promise<Row> {
  const old = await getBudget(env.DB, tenant, id);
  const thresholds = p.thresholds ?? thresholdsOf(old);
  const url = p.alert_url !== undefined ? p.alert_url : old.alert_url;
  checkAlerts(env, thresholds, url);
  return {
    ...old,
    ...(p.limit_usd !== undefined ? { limit_micro: toMicro(p.limit_usd) } : {}),
    ...(p.window !== undefined ? { window: p.window } : {}),
    ...(p.anchor !== undefined ? { anchor_ms: anchorMs(p.anchor, now) } : {}),
    ...(p.time_zone !== undefined ? { time_zone: p.time_zone } : {}),
    ...(p.name !== undefined ? { name: p.name } : {}),
    thresholds: JSON.stringify([...thresholds].sort((a, b) => a - b)),
    alert_url: url,
    // A new alert URL gets a new secret (shown in that answer); the same URL keeps its own.
    alert_secret: url === null ? null : url === old.alert_url && old.alert_secret ? old.alert_secret : `bsec_${randomHex(32)}`,
    updated_at: now,
  };
}

export async function updateBudget(db: D1Database, tenant: string, row: Row): Promise<void> {
  await db
    .prepare(
      "UPDATE budgets SET limit_micro = ?, window = ?, anchor_ms = ?, time_zone = ?, name = ?, thresholds = ?, alert_url = ?, alert_secret = ?, updated_at = ? WHERE tenant_id = ? AND id = ?",
    )
    .bind(row.limit_micro, row.window, row.anchor_ms, row.time_zone, row.name, row.thresholds, row.alert_url, row.alert_secret, row.updated_at, tenant, row.id)
    .run();
  forgetBudgets(tenant);
}

export async function deleteBudget(db: D1Database, tenant: string, id: string): Promise<Row> {
  const row = await db.prepare(`DELETE FROM budgets WHERE tenant_id = ? AND id = ? RETURNING ${COLUMNS}`).bind(tenant, id).first<Row>();
  if (!row) throw new AppError("BEM-231", `Budget '${id}' not found in this tenant`);
  forgetBudgets(tenant);
  return row;
}

/**
 * Which budgets a tenant has, per isolate, for BUDGET_CACHE_MS: a turn then makes no D1 read for them. A new
 * budget applies within that time everywhere (at once in the isolate that made it); a changed or deleted one
 * at once, as each object holds its own terms.
 */
export const BUDGET_CACHE_MS = 10_000;
const cached = new Map<string, { until: number; rows: Promise<Row[]> }>();
const forgetBudgets = (tenant: string) => cached.delete(tenant);

/** Who a call is for: its key, its thread, the end user it names and the budget tags its metadata sends, if any. */
export type Payer = { keyId: string; thread?: string | undefined; user?: string | undefined; tags?: Readonly<Record<string, string>> | undefined };

/** The budgets a call spends from. */
export async function budgetsFor(db: D1Database, tenant: string, payer: Payer, now = Date.now()): Promise<Row[]> {
  let entry = cached.get(tenant);
  if (!entry || entry.until <= now) {
    entry = { until: now + BUDGET_CACHE_MS, rows: listBudgets(db, tenant) };
    cached.set(tenant, entry);
    entry.rows.catch(() => forgetBudgets(tenant));
  }
  const target: Record<Exclude<BudgetKind, "metadata">, string | undefined> = { tenant: "", key: payer.keyId, thread: payer.thread, user: payer.user };
  // A declared key holds no `=`, so `key=value` names one pair.
  const tagged = new Set(Object.entries(payer.tags ?? {}).map(([k, v]) => `${k}=${v}`));
  return (await entry.rows).filter((r) => (r.kind === "metadata" ? tagged.has(r.target) : target[r.kind] === r.target));
}

/** A budget's counter object: named by tenant and id, so no name another tenant can form reaches it. */
export const budgetObject = (env: Env, tenant: string, id: string) => env.BUDGETS.get(env.BUDGETS.idFromName(`${tenant}/${id}`));
