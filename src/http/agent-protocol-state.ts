import type { Principal } from "../core/principal";
import { stateFor } from "./memory-view";
import type { ThreadClient } from "../thread/client";
import type { HistoryEntry, ThreadState } from "../thread/types";
import { interruptOf } from "../agent-protocol/interrupts";
import { toLangChain } from "../agent-protocol/messages";
import type { ThreadRecord } from "../agent-protocol/thread-records";

/**
 * A thread's state as LangGraph's API reads it (`values`, `checkpoint`, `parent_checkpoint`,
 * `metadata.source/step`), from the thread's own checkpoints: the state of every channel, its
 * messages in LangChain's shape. An agent's run has no graph nodes: `next` and `tasks` are empty
 * unless a call waits for a person's decision (src/agent-protocol/interrupts.ts).
 */
export type LgCheckpoint = { thread_id: string; checkpoint_ns: string; checkpoint_id: string | null; checkpoint_map: null };

export const checkpointRef = (threadId: string, id: string | null): LgCheckpoint => ({
  thread_id: threadId,
  checkpoint_ns: "",
  checkpoint_id: id,
  checkpoint_map: null,
});

const iso = (ms: number) => new Date(ms).toISOString();

/** The channels as LangGraph `values`: every channel, `messages` in LangChain's shape. */
export function valuesOf(state: ThreadState): Record<string, unknown> {
  return { ...state.channels, messages: state.channels.messages.map(toLangChain) };
}

function render(threadId: string, state: ThreadState, entry: HistoryEntry | undefined) {
  // A run its agent's human_in_the_loop stopped waits in one task, as LangGraph reports an interrupted node.
  const interrupt = interruptOf(state.channels.messages);
  const interrupts = interrupt ? [interrupt] : [];
  return {
    values: valuesOf(state),
    next: interrupt ? ["human_in_the_loop"] : [],
    tasks: interrupt ? [{ id: interrupt.id, name: "human_in_the_loop", path: [], error: null, interrupts, checkpoint: null, state: null, result: null }] : [],
    checkpoint: checkpointRef(threadId, state.checkpoint_id),
    parent_checkpoint: entry?.parent_id ? checkpointRef(threadId, entry.parent_id) : null,
    metadata: entry ? { source: entry.source, step: entry.step, writes: null, parents: {} } : {},
    created_at: entry ? iso(entry.created_at) : null,
    interrupts,
  };
}
export type LgState = ReturnType<typeof render>;

/** The state at the head, or at one of the thread's checkpoints (404 BEM-032 otherwise); empty for a thread not yet run. */
export async function stateAt(client: ThreadClient, p: Principal, checkpointId?: string): Promise<LgState> {
  const state = stateFor(p, await client.getState(checkpointId));
  const id = state.checkpoint_id;
  const entry = id === null ? undefined : (await client.getHistory({ from: id, limit: 1 })).checkpoints[0];
  return render(client.threadId, state, entry);
}

/** Checkpoints of every branch, newest first, each with its whole state (LangGraph's history); `before` and `from` as ThreadClient.getHistory. */
export async function historyOf(client: ThreadClient, p: Principal, opts: { limit: number; before?: string; from?: string }): Promise<LgState[]> {
  const page = await client.getHistory(opts);
  return Promise.all(page.checkpoints.map(async (cp) => render(client.threadId, stateFor(p, await client.getState(cp.id)), cp)));
}

/** A thread as LangGraph's API returns it: its record, its status and its values at the head. */
export async function threadOf(client: ThreadClient, p: Principal, record: ThreadRecord) {
  const view = await client.apiThreadView();
  const state = render(client.threadId, stateFor(p, view.state), view.entry ?? undefined);
  const [busy, last] = [view.busy, view.lastRun];
  return {
    thread_id: record.thread_id,
    created_at: iso(record.created_at),
    updated_at: iso(record.updated_at),
    state_updated_at: state.created_at ?? iso(record.updated_at),
    metadata: record.metadata,
    // As LangGraph's: busy while a run holds it, error when its last run failed, else idle.
    status: busy ? "busy" : state.interrupts.length > 0 ? "interrupted" : last?.status === "error" ? "error" : "idle",
    values: state.values,
    interrupts: Object.fromEntries(state.interrupts.map((i) => [i.id, [i]])),
    config: {},
  };
}
