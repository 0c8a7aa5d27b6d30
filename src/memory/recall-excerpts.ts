import { messageText, type Message } from "../core/message";
import { quoteLine } from "./facts";
import { EXCERPT_GROUP_TOKENS, EXCERPT_HEADER_TOKENS, recalledCost } from "../thread/recall";
import type { RecalledTurn } from "../thread/types";
import type { RecallReport } from "./report";
import type { RecallConfig, TokenedMessage } from "./types";

/**
 * How recalled turns reach the model: one system message placed before the recent window,
 * saying they are earlier excerpts, each run of consecutive turns under its time:
 *
 *   Earlier in this conversation (excerpts recalled for the current input, oldest first; the recent turns follow):
 *   [2023-05-08 13:56 UTC]
 *   user: "…"
 *   assistant: "…" →"get_weather"("{\"city\":\"Oslo\"}")
 *
 * Each turn's text (and a call's name and arguments) is a JSON string, as a fact's is (facts.ts
 * quoteLine): the excerpt is a system message, and a text that could start a line of its own
 * would let any key that reaches the thread write a time line, another speaker or an instruction
 * into every later turn that recalls it.
 *
 * One message, not the turns themselves: the model cannot take an excerpt for the live exchange
 * or imitate a prefix in its own replies, no provider sees a system message between turns, and
 * a tool call travels as text with its result (never a dangling pair). Its token cost is what
 * the thread budgeted (recalledCost), an upper bound of this text's estimate.
 */

export const RECALL_MESSAGE_ID = "recalled";
const HEADER = "Earlier in this conversation (excerpts recalled for the current input, oldest first; the recent turns follow):";

/** Defaults: three quarters of the turn budget to recall, two turns either side of a match (bench/README.md, LoCoMo). */
export const DEFAULT_RECALL: RecallConfig = { share: 0.75, neighbours: 2 };

/** Each time line's text, by time (a conversation's turns share a few session times, and every turn formats them again). */
const minutes = new Map<number, string>();
function minute(ms: number): string {
  let text = minutes.get(ms);
  if (text === undefined) {
    if (minutes.size >= 4096) minutes.clear();
    text = `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
    minutes.set(ms, text);
  }
  return text;
}

/**
 * Each message's excerpt line, kept while the message object lives: the thread's object hands out
 * the same decoded messages turn after turn (recall.ts RecallRows), and successive turns recall
 * largely the same ones. Stored messages are never edited in place (tail-cache.ts).
 */
const lines = new WeakMap<Message, string>();

function line(m: Message): string {
  const known = lines.get(m);
  if (known !== undefined) return known;
  const calls = (m.tool_calls ?? []).map((c) => ` →${quoteLine(c.function.name)}(${quoteLine(c.function.arguments)})`).join("");
  const text = `${m.role}: ${quoteLine(messageText(m.content))}${calls}`;
  lines.set(m, text);
  return text;
}

/** The system message the recalled turns travel in (metadata names them: ids, never text, are what gets stored). */
export function excerptMessage(recalled: readonly RecalledTurn[]): Message {
  const lines = [HEADER];
  let group: number | undefined;
  for (const t of recalled) {
    if (t.group !== group) lines.push(`[${minute(t.message.created_at)}]`);
    group = t.group;
    lines.push(line(t.message));
  }
  return {
    id: RECALL_MESSAGE_ID,
    role: "system",
    content: lines.join("\n"),
    metadata: { recalled: recalled.map((t) => t.message.id) },
    created_at: recalled[0]?.message.created_at ?? 0,
  };
}

export const recallReport = (recalled: readonly RecalledTurn[]): RecallReport[] =>
  recalled.map((t) => ({ id: t.message.id, tokens: t.tokens, reason: t.why, score: t.score, ...(t.channels ? { channels: t.channels } : {}) }));

/**
 * The window and recalled turns loaded for a larger budget, cut to `room` the way the object
 * would choose (its window preloaded under the run's lease, then facts took their share):
 * the newest window within (1 − share) × room, the best recalled runs that fit the rest, then
 * what is left back to the window. Everything fits: returned unchanged.
 */
export function fitRecalled(
  window: readonly TokenedMessage[],
  recalled: readonly RecalledTurn[],
  room: number,
  share: number,
): { window: TokenedMessage[]; recalled: RecalledTurn[] } {
  const sum = (ts: readonly TokenedMessage[]) => ts.reduce((n, t) => n + t.tokens, 0);
  if (sum(window) + recalledCost(recalled) <= room) return { window: [...window], recalled: [...recalled] };
  const newest = (limit: number) => {
    let start = window.length;
    while (start > 0 && window[start - 1]!.tokens <= limit) limit -= window[--start]!.tokens;
    return window.slice(start);
  };
  let w = newest(Math.floor(room * (1 - share)));
  let left = room - sum(w) - EXCERPT_HEADER_TOKENS;
  const groups = new Map<number, RecalledTurn[]>();
  for (const t of recalled) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
  const best = (g: RecalledTurn[]) => Math.max(...g.map((t) => t.score));
  const kept = new Set<number>();
  for (const [id, g] of [...groups].sort((a, b) => best(b[1]) - best(a[1]))) {
    const cost = EXCERPT_GROUP_TOKENS + g.reduce((n, t) => n + t.tokens, 0);
    if (cost > left) continue;
    kept.add(id);
    left -= cost;
  }
  if (kept.size === 0) return { window: newest(room), recalled: [] };
  const out = recalled.filter((t) => kept.has(t.group));
  w = newest(room - recalledCost(out));
  return { window: w, recalled: out };
}
