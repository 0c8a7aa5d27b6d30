/**
 * The memory report a run stored with its routing (last_route.memory), as table rows: which facts
 * the model was given and why — the BM25 score of a relevant fact, "always", "didn't fit" — and the
 * earlier turns recall brought (by message id, with their score).
 * Pure (no DOM), so the rules are tested in test/ui/views.test.ts.
 */
import type { FactReportRow, StoredMemoryReport } from "./types";

export type ReportRow = { id: string; scope: string; kind: string; key: string; tokens: number; loaded: boolean; why: string };

const WHY: Record<FactReportRow["reason"], string> = {
  fits: "fits (the whole scope fit its share)",
  always: "always (a kind the agent always loads)",
  relevant: "relevant",
  recent: "recent (newest after the relevant)",
  "didn't fit": "didn't fit",
};

export function reportRows(report: StoredMemoryReport): ReportRow[] {
  const turns = (report.recalled ?? []).map((t) => ({
    id: t.id,
    scope: "session",
    kind: "earlier turn",
    key: "",
    tokens: t.tokens,
    loaded: true,
    why: t.reason === "match" ? `recalled (BM25 score ${t.score.toFixed(3)})` : `recalled next to a match (score ${t.score.toFixed(3)})`,
  }));
  return [...factRows(report), ...turns];
}

function factRows(report: StoredMemoryReport): ReportRow[] {
  return report.facts.map((f) => ({
    id: f.id,
    scope: f.scope,
    kind: f.kind,
    key: f.key ?? "",
    tokens: f.tokens,
    loaded: f.loaded,
    why: f.reason === "relevant" && typeof f.score === "number" ? `relevant (BM25 score ${f.score.toFixed(3)})` : WHY[f.reason],
  }));
}

/** One line above the table: loaded, tokens, left out (examined or only counted), entries not stored. */
export function reportSummary(report: StoredMemoryReport): string {
  const loaded = report.facts.filter((f) => f.loaded);
  const tokens = loaded.reduce((n, f) => n + f.tokens, 0);
  const parts = [`${loaded.length} fact(s) loaded, ${tokens} token(s)`, `${report.dropped_facts} left out`];
  if (report.facts_omitted) parts.push(`${report.facts_omitted} more entries not stored`);
  if (report.facts_hidden) parts.push(`${report.facts_hidden} entries from scopes this key cannot read`);
  if (report.recalled?.length) parts.push(`${report.recalled.length} earlier turn(s) recalled`);
  return parts.join("; ");
}
