import { messageText, type Message } from "../core/message";
import { searchTerms } from "../core/search-terms";
import type { AgentConfig } from "../config/model-config";
import { DEFAULT_RECALL, excerptMessage, recallReport } from "../memory/recall-excerpts";
import type { MemoryReport } from "../memory/report";
import type { RecallConfig } from "../memory/types";
import type { RecallAsk } from "../thread/types";
import type { Middleware } from "./middleware/types";
import type { HeldThread } from "./held-thread";

/**
 * Recall in a run (docs/concepts/recall.md): the agent's setting (models.yaml
 * `recall`, on by default), the query — the new input, or the newest turns' words when the
 * input has no search word of its own ("and then?") — and, for a run that holds
 * the whole state (middleware that rewrites it, or a branch replayed from a checkpoint), the
 * view the model is sent.
 */

export const recallConfigOf = (agent: AgentConfig | undefined): RecallConfig | false => (agent ? agent.recall : DEFAULT_RECALL);

/** Turns the newest ones lend a short input's query. */
const LENDING_TURNS = 2;

export function recallQuery(input: string, thread: HeldThread | undefined): string {
  if (!thread || searchTerms(input).length > 0) return input;
  const newest = thread.log.recent(Number.MAX_SAFE_INTEGER, { maxMessages: LENDING_TURNS }).messages;
  return [input, ...newest.map((m) => messageText(m.content))].join("\n");
}

/** The tokens the agent's view-only middleware (trim) allow the turns, if any bound them. */
export function windowTokens(middlewares: readonly Middleware[]): number | undefined {
  const bounds = middlewares.flatMap((m) => (m.windowTokens !== undefined ? [m.windowTokens] : []));
  return bounds.length > 0 ? Math.min(...bounds) : undefined;
}

/**
 * The model's view of a whole state: the newest window within `room` and the earlier turns the
 * live index ranks for `ask` among this state's own messages (a branch recalls only its own),
 * as one excerpt message before the window. Each call records what it recalled in `report`.
 */
export function wholeStateView(thread: HeldThread, ask: RecallAsk, room: number, report: MemoryReport): (messages: Message[]) => Message[] {
  return (messages) => {
    const r = thread.log.recallOver(messages, room, ask);
    const recalled = r.recalled ?? [];
    if (recalled.length === 0) {
      delete report.recalled;
      return r.messages;
    }
    report.recalled = recallReport(recalled);
    return [excerptMessage(recalled), ...r.messages];
  };
}
