import { isSummary, type SummaryOf } from "../../src/pipeline/middleware/summarization";
import { repairToolPairs } from "../../src/pipeline/middleware/tool-pairs";
import type { Message } from "../../src/thread/message";

/**
 * Reverses a summary: given the messages of the checkpoint before it
 * (`previous`) and the current messages, puts the range the summary names back
 * in place of the summary message. Returns null when `previous` does not hold
 * that exact range.
 */
export function expandSummary(current: readonly Message[], summaryId: string, previous: readonly Message[]): Message[] | null {
  const at = current.findIndex((m) => m.id === summaryId);
  const summary = current[at];
  if (!summary || !isSummary(summary)) return null;
  const of = summary.metadata!.summary_of as SummaryOf;
  const from = previous.findIndex((m) => m.id === of.from_id);
  const to = previous.findIndex((m) => m.id === of.to_id);
  if (from < 0 || to < from || to - from + 1 !== of.count) return null;
  const restored = previous.slice(from, to + 1);
  const restoredIds = new Set(restored.map((m) => m.id));
  // Messages that survived the summary are already in `current`; keep them once.
  const rest = current.filter((m, i) => i !== at && !restoredIds.has(m.id));
  return repairToolPairs([...rest.slice(0, at), ...restored, ...rest.slice(at)]);
}
