import { errorText, log } from "../core/log";
import { postSigned } from "../webhooks/callback";
import { budgetEventHeaders } from "../webhooks/signature";
import type { Alert } from "./budget-object";
import type { BudgetRow } from "./store";

/** What a threshold event's receiver gets (docs/operations/budgets.md), signed with the budget's alert secret (scheme b1). */
export type BudgetEvent = {
  id: string;
  type: "budget.threshold";
  created_at: string;
  tenant: string;
  budget: { id: string; kind: string; target: string | null; name: string | null };
  threshold: number;
  limit_usd: number;
  spent_usd: number;
  window_start: string | null;
  resets_at: string | null;
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function budgetEvent(tenant: string, b: BudgetRow, a: Alert): BudgetEvent {
  return {
    id: a.event,
    type: "budget.threshold",
    created_at: iso(a.at)!,
    tenant,
    budget: { id: b.id, kind: b.kind, target: b.kind === "tenant" ? null : b.target, name: b.name },
    threshold: a.threshold,
    limit_usd: a.limit_micro / 1_000_000,
    spent_usd: a.spent_micro / 1_000_000,
    window_start: b.window === null ? null : iso(a.start),
    resets_at: iso(a.resets_at),
  };
}

/**
 * Sends the events of the thresholds a call reached (its object recorded each once per window) with the callbacks'
 * retries. One that still fails is logged, never retried from here: `/v1/usage` shows every reached threshold.
 */
export async function sendAlerts(tenant: string, b: BudgetRow, alerts: Alert[]): Promise<void> {
  if (!b.alert_url || !b.alert_secret || alerts.length === 0) return;
  const { alert_url: url, alert_secret: secret } = b;
  await Promise.all(
    alerts.map(async (a) => {
      const body = JSON.stringify(budgetEvent(tenant, b, a));
      try {
        const out = await postSigned(url, body, (now) => budgetEventHeaders(secret, a.event, body, now));
        if (out.status === "rejected") log.warn("budget alert refused", { budget: b.id, event: a.event, http_status: out.http_status });
      } catch (e) {
        log.warn("budget alert not delivered", { budget: b.id, event: a.event, message: errorText(e) });
      }
    }),
  );
}
