import { authorizeThread } from "../auth/policy";
import type { Attempt } from "../providers/failover";
import type { ModelConfig } from "../config/model-config";
import type { Checkpoint, UpdateOp } from "../thread/types";
import { toThreadOps } from "./state";
import type { LoopStep, StepWrite } from "./tools/loop";
import type { Principal } from "../core/principal";
import { LAST_ROUTE, type MemoryReport } from "../memory/report";
import type { RouteResult } from "../routing/router";
import type { Reducers } from "./state";
import type { HeldThread } from "./held-thread";
import { routeSummary } from "./turn";

/**
 * The memory report kept with a checkpoint (the inspector shows it) and a stored Responses body: the run's report,
 * its first entries only, so a turn that examined hundreds of facts does not store hundreds of rows.
 */
export const STORED_REPORT_FACTS = 64;
export const storedReport = (m: MemoryReport) => {
  // Recalled turns are listed by message id, score and why, never their text.
  const recalled = m.recalled ? { recalled: m.recalled.slice(0, STORED_REPORT_FACTS) } : {};
  return m.facts.length > STORED_REPORT_FACTS
    ? { facts: m.facts.slice(0, STORED_REPORT_FACTS), dropped_facts: m.dropped_facts, facts_omitted: m.facts.length - STORED_REPORT_FACTS, ...recalled }
    : { ...m, ...recalled };
};

/** What saving a run needs: its thread, who runs it, where it branches, its reducers, what its first checkpoint records, its writes. */
export type SaveTurn = {
  thread: HeldThread;
  principal: Principal;
  /** The run continues from this checkpoint: the thread forks there first. */
  branchFrom?: string;
  /** The run continues from an empty thread: its first save removes the stored messages first, in its own transaction. */
  fromEmpty?: boolean;
  reducers: Reducers;
  /** Kept with the first checkpoint (`last_route`): the routing, the scopes loaded and the facts report (capped). */
  record: { model: ModelConfig; route: RouteResult; attempts: Attempt[]; scopes: string[]; memory?: MemoryReport };
  /** Writes before the first step's own (the input), then the steps. */
  prefix: StepWrite[];
  steps: LoopStep[];
  /** Runs in the last checkpoint's transaction (a Responses record). */
  alongside?: (cp: Checkpoint) => void;
};

/** Writes the run's steps as checkpoints (the first with the input and the routing record); returns the last one's id. */
export async function saveTurn(s: SaveTurn): Promise<string | null> {
  const { thread, record } = s;
  if (s.steps.length === 0) return null;
  const saves: { ops: UpdateOp[]; source: "input" | "loop" }[] = [];
  for (const [i, step] of s.steps.entries()) {
    const writes = i === 0 ? [...s.prefix, ...step.writes] : step.writes;
    const ops: UpdateOp[] = writes.flatMap((w) => toThreadOps(w.update, s.reducers));
    if (i === 0 && s.fromEmpty) ops.unshift({ op: "remove_all" });
    if (i === 0) {
      ops.push({
        op: "set",
        channel: LAST_ROUTE,
        reducer: "last_value",
        // The compact summary (no trace; see routeSummary), the scopes whose facts the run loaded and which facts, why.
        value: {
          ...routeSummary(record.model, record.route, record.attempts),
          memory_scopes: record.scopes,
          ...(record.memory ? { memory: storedReport(record.memory) } : {}),
        },
      });
    }
    if (ops.length > 0) saves.push({ ops, source: i === 0 ? "input" : "loop" });
  }
  // Defence in depth behind the check where the run is planned (declared rewritesHistory), no I/O:
  // whatever removed stored messages — an undeclared middleware, a tool's Command — needs the rewrite right too.
  if (saves.some((w) => w.ops.some((o) => o.op === "remove" || o.op === "remove_all"))) authorizeThread(s.principal, thread.threadId, true);
  if (s.branchFrom !== undefined) await thread.fork(s.branchFrom);
  let checkpointId: string | null = null;
  // The last save ends the run in the same event, so the next run starts right on it.
  for (const [i, w] of saves.entries()) {
    const last = i === saves.length - 1;
    checkpointId = (await thread.write({ ops: w.ops }, w.source, { end: last, ...(last && s.alongside ? { alongside: s.alongside } : {}) })).id;
  }
  return checkpointId;
}
