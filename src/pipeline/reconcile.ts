import { decide } from "../auth/policy";
import type { Principal } from "../core/principal";
import { AppError } from "../core/errors";
import { isServerToolBlock } from "../core/message";
import type { HeldThread } from "./held-thread";
import type { ReconcileReport, TurnInput } from "./turn";

export type { ReconcileReport } from "./turn";

/**
 * Resent-history reconciliation (docs/concepts/resent-history.md): a stateful request that repeats
 * messages the thread holds stores only the new part; one that diverges from the stored path
 * continues as a branch from the last common checkpoint. System messages are per-call
 * instructions and take no part. An explicit checkpoint_id wins (no reconciliation).
 * Costs one read of O(incoming) rows, and nothing for a request of one new message. Runs in
 * the thread's object, as the run's first step, under its lease.
 */
export function reconcileTurn(input: TurnInput, room: HeldThread): { input: TurnInput; report: ReconcileReport | null } {
  const rest = input.messages.filter((m) => m.role !== "system");
  if (input.checkpointId !== undefined) {
    refuseUnreceivedBlocks(rest, room.threadId, input.principal);
    return { input, report: null };
  }
  if (rest.length < 2) {
    refuseUnreceivedBlocks(rest, room.threadId, input.principal);
    return { input, report: { matched: 0, appended: rest.length, branched_from: null } };
  }
  // The thread's reach was checked where the run was admitted (dispatch-turn.ts), before it was handed here.
  const r = room.log.reconcile(rest);
  const fresh = rest.slice(r.append_from);
  if (fresh.length === 0)
    throw new AppError("BEM-109", `All ${rest.length} messages are already in thread '${room.threadId}'; send a new message (or checkpoint_id to branch)`);
  refuseUnreceivedBlocks(fresh, room.threadId, input.principal);
  // The divergence lies inside the thread's first checkpoint: the run starts from an empty thread, which its own
  // save makes so (history keeps the old path); nothing is written before the model answers.
  const systems = input.messages.filter((m) => m.role === "system");
  const from = r.reset ? { fromEmpty: true as const } : r.branch_from !== null ? { checkpointId: r.branch_from } : {};
  return {
    input: { ...input, messages: [...systems, ...fresh], ...from },
    report: { matched: r.matched, appended: fresh.length, branched_from: r.branch_from, ...(r.reset ? { reset: true as const } : {}) },
  };
}

/**
 * A thread replays its blocks to Anthropic on every later turn, so it stores a block of a type this
 * release does not know (kept whole for Anthropic types newer than it) only as an Anthropic reply in
 * the thread brought it: a client's resent copy of such a reply matches the stored one and is not new.
 * A new one is the client's own, which Anthropic may refuse on each of those turns; any key that
 * reaches a shared thread could so stop every Anthropic turn on it. Refused before anything is
 * written (400 BEM-011); a stateless request passes it on (it is that request's alone).
 */
function refuseUnreceivedBlocks(fresh: TurnInput["messages"], threadId: string, principal: Principal): void {
  fresh.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    const unknown = m.content.find((p) => p.type === "anthropic_block" && !isServerToolBlock(p.block.type));
    if (unknown?.type === "anthropic_block")
      throw new AppError(
        "BEM-011",
        `messages: a '${unknown.block.type.slice(0, 64)}' block (new message ${i + 1}) did not come from a reply in thread '${threadId}', and a thread stores such a block only from Anthropic's reply; send it without a thread, or leave it out`,
      );
    const blocks = m.content.flatMap((p) => (p.type === "anthropic_block" ? [p.block] : []));
    // A client's own tool use and its result come together (Anthropic refuses either alone, on every later turn).
    const uses = new Set(blocks.flatMap((b) => (b.type === "server_tool_use" || b.type === "mcp_tool_use" ? [String(b.id)] : [])));
    const results = new Set(blocks.flatMap((b) => ("tool_use_id" in b ? [String(b.tool_use_id)] : [])));
    const unpaired = [...uses].find((id) => !results.has(id)) ?? [...results].find((id) => !uses.has(id));
    if (unpaired !== undefined)
      throw new AppError(
        "BEM-011",
        `messages: new message ${i + 1} holds a server tool use or result (id '${unpaired.slice(0, 64)}') without its other half; a thread stores them only together, or from Anthropic's reply`,
      );
    // A file's upload is replayed on every later turn of the thread, and fails each once the file is gone.
    if (blocks.some((b) => b.type === "container_upload") && !decide(principal, "rewrite_thread", { thread: threadId }).allow)
      throw new AppError(
        "BEM-011",
        `messages: a container_upload (new message ${i + 1}) is stored in thread '${threadId}' only from a key that may rewrite it; send it without a thread`,
      );
  });
}
