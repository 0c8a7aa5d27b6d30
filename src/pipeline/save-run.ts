import { authorizeThread } from "../auth/policy";
import type { Attempt } from "../providers/failover";
import type { ModelConfig } from "../config/model-config";
import type { Checkpoint, UpdateOp } from "../thread/types";
import { toThreadOps } from "./state";
import type { LoopStep, StepWrite } from "./tools/loop";
import type { Prepared } from "./prepare";
import { routeSummary } from "./turn";

/**
 * The memory report kept with a checkpoint (the inspector shows it) and a stored Responses body: the run's report,
 * its first entries only, so a turn that examined hundreds of facts does not store hundreds of rows.
 */
export const STORED_REPORT_FACTS = 64;
export const storedReport = (m: Prepared["memory"]) => {
  // Recalled turns are listed by message id, score and why, never their text.
  const recalled = m.recalled ? { recalled: m.recalled.slice(0, STORED_REPORT_FACTS) } : {};
  return m.facts.length > STORED_REPORT_FACTS
    ? { facts: m.facts.slice(0, STORED_REPORT_FACTS), dropped_facts: m.dropped_facts, facts_omitted: m.facts.length - STORED_REPORT_FACTS, ...recalled }
    : { ...m, ...recalled };
};

/** Writes the run's steps as checkpoints (the first with the input and the routing record); `alongside` runs in the last one's transaction. */
export async function saveRun(
  p: Prepared,
  prefix: StepWrite[],
  steps: LoopStep[],
  model: ModelConfig,
  attempts: Attempt[],
  alongside?: (cp: Checkpoint) => void,
): Promise<string | null> {
  if (!p.thread || steps.length === 0) return null;
  const saves: { ops: UpdateOp[]; source: "input" | "loop" }[] = [];
  for (const [i, step] of steps.entries()) {
    const writes = i === 0 ? [...prefix, ...step.writes] : step.writes;
    const ops: UpdateOp[] = writes.flatMap((w) => toThreadOps(w.update, p.reducers));
    if (i === 0) {
      ops.push({
        op: "set",
        channel: "last_route",
        reducer: "last_value",
        // The compact summary (no trace; see routeSummary), the scopes whose facts the run loaded and which facts, why
        // (a run prepared without memory, as some tests build it, stores no report).
        value: { ...routeSummary(model, p.route, attempts), memory_scopes: p.scopes, ...(p.memory ? { memory: storedReport(p.memory) } : {}) },
      });
    }
    if (ops.length > 0) saves.push({ ops, source: i === 0 ? "input" : "loop" });
  }
  // A safety net behind the check in prepare (declared rewritesHistory): whatever removed
  // stored messages — an undeclared middleware, a tool's Command — needs the rewrite right too.
  if (saves.some((s) => s.ops.some((o) => o.op === "remove" || o.op === "remove_all"))) authorizeThread(p.input.principal, p.thread.threadId, true);
  if (p.input.checkpointId !== undefined) await p.thread.fork(p.input.checkpointId);
  let checkpointId: string | null = null;
  // The last save ends the run in the same event, so the next run starts right on it.
  for (const [i, s] of saves.entries()) {
    const last = i === saves.length - 1;
    checkpointId = (await p.thread.write({ ops: s.ops }, s.source, { endRun: last, ...(last && alongside ? { alongside } : {}) })).id;
  }
  return checkpointId;
}
