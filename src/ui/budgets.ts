/**
 * The spend budgets over the key (GET /v1/usage's `budgets`: an admin gets all its tenant's, another
 * key its tenant's and its own, as the access policy says) as table rows: what each caps, its limit
 * and window, what the window spent and holds for calls in flight, when it resets, and the alert
 * thresholds it reached. Pure (no DOM), so the rules are tested in test/ui/views.test.ts.
 */
import type { BudgetStanding } from "./types";

export type BudgetRow = {
  id: string;
  /** What the budget caps: its kind, and the key, thread, end user or metadata value (key=value) it is on. */
  over: string;
  limit: string;
  window: string;
  spent: string;
  held: string;
  left: string;
  resets: string;
  thresholds: string;
  /** Nothing left, spent or held: calls under it are refused until it resets. */
  exhausted: boolean;
};

/** Dollars to the cent, finer below a cent (a budget of $0.000001 is allowed). */
export const usd = (n: number): string => (n !== 0 && Math.abs(n) < 0.01 ? `$${n.toPrecision(2)}` : `$${n.toFixed(2)}`);
const percent = (f: number): string => `${Math.round(f * 1000) / 10}%`;

/** Each configured threshold, reached ones with when (and the spend then), in the order set. */
function thresholdsText(b: BudgetStanding): string {
  if (b.thresholds.length === 0) return "none set";
  return b.thresholds
    .map((t) => {
      const hit = b.thresholds_reached.find((r) => r.threshold === t);
      return hit ? `${percent(t)} reached ${hit.at} (${usd(hit.spent_usd)})` : `${percent(t)} not reached`;
    })
    .join("; ");
}

export function budgetRows(budgets: BudgetStanding[]): BudgetRow[] {
  return budgets.map((b) => ({
    id: b.id,
    over: `${b.kind}${b.target === null ? "" : ` ${b.target}`}${b.name ? ` (${b.name})` : ""}`,
    limit: usd(b.limit_usd),
    window: b.window === null ? "none (never resets)" : `${b.window}, from ${b.anchor} (${b.time_zone})`,
    spent: usd(b.spent_usd),
    held: usd(b.reserved_usd),
    left: usd(b.remaining_usd),
    resets: b.resets_at ?? "never",
    thresholds: thresholdsText(b),
    exhausted: b.remaining_usd <= 0,
  }));
}

/** The line above the table: how many budgets, and which are spent. */
export function budgetSummary(budgets: BudgetStanding[]): string {
  if (budgets.length === 0) return "No spend budget applies to this key (an admin key sees all of its tenant's).";
  const out = budgets.filter((b) => b.remaining_usd <= 0).length;
  return `${budgets.length} budget(s)${out ? `, ${out} with nothing left (spent or held): calls under them are refused (402) until they reset` : ""}.`;
}
