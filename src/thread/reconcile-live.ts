import { z } from "@hono/zod-openapi";
import { messageHash, type ReconcileInput } from "./message-hash";
import { decodeMessage } from "./thread-rows";
import { openToolCalls } from "./tool-answers";

/** What a resent list has in common with the thread's live path. */
export type Reconciled = {
  /** Incoming messages the thread already holds (they are not stored again). */
  matched: number;
  /** Index into the incoming list where the new part starts. */
  append_from: number;
  /** Set when the list diverges from the stored path: continue from this checkpoint as a branch. */
  branch_from: string | null;
  /** The divergence is inside the first checkpoint: the branch starts empty. */
  reset: boolean;
};

export type LiveRow = { hash: string; cp: string | null; role: string };

/** A `messages` row as the rule reads it: `json` only where the hash is missing (a row written before v3). */
const HashRow = z.union([
  z.object({ hash: z.string(), role: z.string(), cp: z.string().nullable() }),
  z.object({ hash: z.null(), role: z.string(), cp: z.string().nullable(), json: z.string() }),
]);

const NONE: Reconciled = { matched: 0, append_from: 0, branch_from: null, reset: false };

/**
 * The rule, on hashes (O(incoming): it sees at most the first and last `incoming.length` rows):
 * 1. Overlap: the longest prefix of `incoming` equal to a suffix of the thread (a full or
 *    trailing-window resend) is skipped; the rest is new. One matched message counts only
 *    when it is not a user message (a user may well say the same thing twice), or when the
 *    list goes on with a reply (`replyFollows`: incoming[1] is an assistant message, which a
 *    client sending only new messages does not send — the list is a history).
 * 2. Divergence: `incoming` starts like the thread (at least two messages, or one followed by a
 *    reply, as above) and then differs (an edited message or reply, or a regenerate): continue as
 *    a branch from the last checkpoint whose state is a prefix of `incoming`, and append the rest.
 * 3. Otherwise everything is new.
 */
export function reconcileRows(
  incoming: readonly string[],
  first: readonly LiveRow[],
  last: readonly LiveRow[],
  total: number,
  parentOf: (cp: string) => string | null,
  replyFollows = false,
): Reconciled {
  const n = incoming.length;
  if (n < 2 || total === 0) return NONE;
  const tail = last.length;
  const lastHash = last[tail - 1]?.hash;
  for (let k = Math.min(n, tail); k >= 1; k--) {
    if (incoming[k - 1] !== lastHash) continue;
    let same = true;
    for (let i = 0; i < k && same; i++) same = incoming[i] === last[tail - k + i]!.hash;
    if (same && (k >= 2 || last[tail - 1]!.role !== "user" || replyFollows)) return { matched: k, append_from: k, branch_from: null, reset: false };
  }
  let d = 0;
  while (d < n && d < first.length && incoming[d] === first[d]!.hash) d++;
  if (d === 0 || (d === 1 && !replyFollows) || d >= total) return NONE;
  // The checkpoint that wrote message d-1; if it also wrote message d, its parent's state is the common part.
  let p = d;
  const owner = first[d - 1]!.cp;
  if (owner === null) return NONE; // written before hashes existed: no safe branch point
  if (first[d]?.cp === owner) {
    while (p > 0 && first[p - 1]!.cp === owner) p--;
    const parent = parentOf(owner);
    if (p === 0 || parent === null) return { matched: 0, append_from: 0, branch_from: null, reset: true };
    return { matched: p, append_from: p, branch_from: parent, reset: false };
  }
  return { matched: d, append_from: d, branch_from: owner, reset: false };
}

/**
 * Reads the rows the rule needs from a thread object's SQLite, lazily: the newest n rows
 * (hash and role only) for the overlap, and only when that fails the oldest n+1 (with the
 * writing checkpoint) for a divergence. Hashes are computed for rows written before v3.
 */
export function reconcileLive(sql: SqlStorage, incoming: readonly string[], total: number, replyFollows = false): Reconciled {
  if (incoming.length < 2 || total === 0) return NONE;
  const n = incoming.length;
  const rows = (order: "ASC" | "DESC", limit: number): LiveRow[] => {
    const out: LiveRow[] = [];
    for (const row of sql.exec(`SELECT hash, role, cp, CASE WHEN hash IS NULL THEN json END AS json FROM messages ORDER BY seq ${order} LIMIT ?`, limit)) {
      const r = HashRow.parse(row);
      out.push({ hash: r.hash ?? messageHash(decodeMessage(r.json)), role: r.role, cp: r.cp });
    }
    return out;
  };
  const last = rows("DESC", n).reverse();
  const overlap = reconcileRows(incoming, [], last, total, () => null, replyFollows);
  if (overlap.matched > 0) return overlap;
  const first = total <= n ? last : rows("ASC", n + 1);
  return reconcileRows(
    incoming,
    first,
    last,
    total,
    (cp) => sql.exec<{ parent_id: string | null }>(`SELECT parent_id FROM checkpoints WHERE id = ?`, cp).toArray()[0]?.parent_id ?? null,
    replyFollows,
  );
}

/** The list goes on with a reply after its first message: it is a history (rule 1 and 2's evidence for one matched message). */
export const replyFollows = (incoming: readonly Pick<ReconcileInput, "role">[]): boolean => incoming[1]?.role === "assistant";

/**
 * Rule 1 for a client that leaves the thread's replies out: the AI SDK with a Responses
 * `conversation` sends every user message (and tool output) of the chat again each turn and none
 * of the assistant items the conversation holds — [Q1, Q2] on a thread holding [Q1, A1]. The
 * longest prefix of `incoming` equal to the thread's newest messages with its assistant messages
 * left out is skipped, when the list holds no assistant message itself (a client that sends
 * replies is matched by rule 1), at least one sent message is left as new, and the match is two
 * or more messages, or the thread's only message besides its replies (a new-only client may say
 * the same words again: one matched user message is not evidence enough, as in rule 1). Reads at
 * most 2n + 1 rows, newest first, for n sent; null when the rule does not apply.
 */
export function overlapWithoutReplies(sql: SqlStorage, incoming: readonly ReconcileInput[], total: number): Reconciled | null {
  const n = incoming.length;
  if (n < 2 || total === 0 || incoming.some((m) => m.role === "assistant")) return null;
  const rows = sql
    .exec<{ hash: string | null; role: string; json: string }>(`SELECT hash, role, json FROM messages ORDER BY seq DESC LIMIT ?`, 2 * n + 1)
    .toArray();
  const own = rows
    .filter((r) => r.role !== "assistant")
    .map((r) => r.hash ?? messageHash(decodeMessage(r.json)))
    .reverse();
  const sent = incoming.map(messageHash);
  const wholeThread = rows.length === total;
  for (let k = Math.min(n - 1, own.length); k >= 1; k--) {
    let same = true;
    for (let i = 0; i < k && same; i++) same = sent[i] === own[own.length - k + i];
    if (same && (k >= 2 || (wholeThread && own.length === 1))) return { matched: k, append_from: k, branch_from: null, reset: false };
  }
  return null;
}

/**
 * Rule 4, the open-call anchor: a resend that ends with outputs for the thread's open tool
 * calls continues at those calls, when the messages before the outputs match what is stored
 * before them — exactly, or with stored assistant messages left out (what a client continuing
 * an OpenAI conversation sends: its own messages and tool outputs, not the items the
 * conversation already holds). The AI SDK's tool loop with `conversation` resends
 * [user, function_call_output] on a thread holding [user, call]: neither overlap nor
 * divergence sees that the output answers the stored call. Reads at most 2n + 1 rows, newest
 * first, for n sent; null when the rule does not apply.
 */
export function anchorOnOpenCalls(sql: SqlStorage, incoming: readonly ReconcileInput[], total: number): Reconciled | null {
  const n = incoming.length;
  if (n < 2 || total === 0 || incoming[n - 1]!.role !== "tool") return null;
  const rows = sql
    .exec<{ hash: string | null; role: string; json: string }>(`SELECT hash, role, json FROM messages ORDER BY seq DESC LIMIT ?`, 2 * n + 1)
    .toArray();
  const open = openToolCalls(rows.map((r) => decodeMessage(r.json)));
  // The sent outputs that answer open calls: the trailing run of them (earlier outputs answer stored calls).
  let outputs = 0;
  for (let m = incoming[n - 1]; m?.role === "tool" && m.tool_call_id != null && open.has(m.tool_call_id); m = incoming[n - 1 - outputs]) outputs++;
  const before = n - outputs;
  if (outputs === 0 || before === 0) return null;
  // Walk back from the newest stored row, matching the sent messages before the outputs from their end.
  let i = before - 1;
  for (const r of rows) {
    if (i < 0) break;
    const hash = r.hash ?? messageHash(decodeMessage(r.json));
    if (hash === messageHash(incoming[i]!)) i--;
    else if (r.role !== "assistant") return null; // only what the conversation holds for the client may be left out
  }
  return i < 0 ? { matched: before, append_from: before, branch_from: null, reset: false } : null;
}
