/**
 * The memory report a run stored with its routing (last_route.memory), as table rows: which facts
 * the model was given and why — the score of a relevant fact (BM25, or its words' and meaning's ranks fused),
 * "always", "didn't fit" — and the earlier turns recall brought (by message id, with their score).
 * Pure (no DOM), so the rules are tested in test/ui/views.test.ts.
 */
import type { FactReportRow, RankChannelsRow, StoredMemoryReport } from "./types";

export type ReportRow = { id: string; scope: string; kind: string; key: string; tokens: number; loaded: boolean; why: string };

const WHY: Record<FactReportRow["reason"], string> = {
  fits: "fits (the whole scope fit its share)",
  always: "always (a kind the agent always loads)",
  relevant: "relevant",
  recent: "recent (newest after the relevant)",
  "didn't fit": "didn't fit",
};

/** A score and, when channels were fused, each one's rank and own score (docs/concepts/recall-by-meaning.md); without them the score is BM25's. */
function scoreText(score: number, channels: RankChannelsRow | undefined): string {
  if (!channels) return `BM25 score ${score.toFixed(3)}`;
  const parts = [`score ${score.toFixed(3)}`];
  if (channels.full_text) parts.push(`words #${channels.full_text.rank}, BM25 ${channels.full_text.score.toFixed(3)}`);
  if (channels.dense) parts.push(`meaning #${channels.dense.rank}, cosine ${channels.dense.score.toFixed(3)}`);
  return parts.join("; ");
}

export function reportRows(report: StoredMemoryReport): ReportRow[] {
  const turns = (report.recalled ?? []).map((t) => ({
    id: t.id,
    scope: "session",
    kind: "earlier turn",
    key: "",
    tokens: t.tokens,
    loaded: true,
    why: t.reason === "match" ? `recalled (${scoreText(t.score, t.channels)})` : `recalled next to a match (score ${t.score.toFixed(3)})`,
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
    why: f.reason === "relevant" && typeof f.score === "number" ? `relevant (${scoreText(f.score, f.channels)})` : WHY[f.reason],
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
