import { unwrap } from "../core/wire-error";
import type { MessageInput } from "../core/message";
import { withoutPrototypes } from "./thread-store";
import { parseThreadId, type ThreadStub, threadStub } from "./thread-id";
import type { ReconcileInput } from "./message-hash";
import type { Reconciled } from "./reconcile-live";
import type { ApiThreadView, RunAdmission, RunRecord, RunStatus } from "./run-records";
import type { StoredResponse } from "./stored-responses";
import type {
  Checkpoint,
  History,
  HistoryOptions,
  LoadRecentOptions,
  LoadRecentResult,
  StatePage,
  ThreadUpdate,
  ThreadState,
  UpdateOp,
  UpdateSource,
} from "./types";

/** The thread a write or delete is for: the object keeps the tenant's thread list for it, under its lease. */
type ThreadName = { tenant: string; threadId: string };

/**
 * The caller's handle on one thread of one tenant. Errors arrive as AppError.
 *
 *   const t = new ThreadClient(env, principal.tenant, threadId);   // BEM-030 on a bad id
 *   const ctx = await t.loadRecent(model.max_tokens);               // newest messages that fit
 *   await t.appendMessages([userMsg, assistantMsg], "input");       // one turn = one checkpoint
 *   await t.update({ ops: [{ op: "set", channel: "todos", value: ["x"], reducer: "append" }] }, "loop");
 *   const s = await t.getState();  s.channels.todos                  // any channel
 *
 * A write waits its turn behind a run holding the thread (runs hold it inside the object). Writes also record the thread in the tenant's D1 thread list (the object does, under its lease:
 * so no list entry of a write lands after a later delete).
 */
export class ThreadClient {
  readonly threadId: string;
  private readonly stub: ThreadStub;

  constructor(
    env: Env,
    readonly tenant: string,
    threadId: string,
  ) {
    this.threadId = parseThreadId(threadId);
    this.stub = threadStub(env, tenant, this.threadId);
  }

  async getState(checkpointId?: string): Promise<ThreadState> {
    return this.#whole(unwrap(await this.stub.getState(checkpointId ?? null)));
  }

  /** LangGraph's thread read (src/http/agent-protocol-state.ts): the head state whole, its entry, busy, the last run; one call for most threads. */
  async apiThreadView(): Promise<Omit<ApiThreadView, "page"> & { state: ThreadState }> {
    const { page, ...rest } = unwrap(await this.stub.apiThreadView());
    return { ...rest, state: await this.#whole(page) };
  }

  /** A state from its first page: page by page (each RPC well under the 32 MiB limit), all pages of the checkpoint the first one read. */
  async #whole(first: StatePage): Promise<ThreadState> {
    const messages = [...first.channels.messages];
    for (let next = first.next_offset; next !== null; ) {
      const page = unwrap(await this.stub.getState(first.checkpoint_id, { offset: next }));
      messages.push(...page.channels.messages);
      next = page.next_offset;
    }
    const { next_offset: _, ...state } = first;
    return { ...withoutPrototypes({ ...state, channels: { ...state.channels, messages } }), thread_id: this.threadId };
  }

  async getHistory(opts: HistoryOptions = {}): Promise<History> {
    return unwrap(await this.stub.getHistory(opts));
  }

  // The LangGraph API's runs of this thread (src/thread/run-records.ts).
  /** Stops the run if it runs in the thread's object now; false when it does not. */
  async runCancel(runId: string): Promise<boolean> {
    return unwrap(await this.stub.runCancel(runId));
  }
  async apiThreadCreated(): Promise<void> {
    unwrap(await this.stub.apiThreadCreated());
  }
  async runAdmit(r: Omit<RunRecord, "updated_at" | "error">, opts: { reject: boolean; create: boolean; interrupt?: boolean }): Promise<RunAdmission> {
    return unwrap(await this.stub.runAdmit(r, opts));
  }
  async runGet(runId: string): Promise<RunRecord | null> {
    return unwrap(await this.stub.runGet(runId));
  }
  async runList(opts: { limit: number; offset: number; status?: RunStatus }): Promise<RunRecord[]> {
    return unwrap(await this.stub.runList(opts));
  }
  async runAppend(runId: string, events: { event: string; data: string }[], end?: { status: RunStatus; error?: string }): Promise<void> {
    unwrap(await this.stub.runAppend(runId, events, end));
  }
  /** The run's events after `after`, then live, then its end: NDJSON, one RunFeed a line (src/thread/run-records.ts). */
  async runFollow(runId: string, after: number): Promise<ReadableStream<Uint8Array>> {
    return await this.stub.runFollow(runId, after);
  }

  /** Whether the thread exists: its object holds a checkpoint (the D1 list is bookkeeping, the object the truth). */
  async exists(): Promise<boolean> {
    return (await this.getHistory({ limit: 1 })).checkpoints.length > 0;
  }

  /** Applies ops atomically as one checkpoint (`{ops}` or the ops array), in turn behind any run holding the thread. */
  async update(update: ThreadUpdate | UpdateOp[], source: UpdateSource): Promise<Checkpoint> {
    const body: ThreadUpdate = Array.isArray(update) ? { ops: update } : update;
    return unwrap(await this.stub.write(body, source, this.#name));
  }

  /** Removes a message for good: the new checkpoint drops it and older checkpoints keep it blanked (a deleted conversation item). */
  async removeForGood(messageId: string): Promise<Checkpoint> {
    return unwrap(await this.stub.write({ ops: [{ op: "remove", id: messageId }] }, "update", this.#name, { redactRemoved: true }));
  }

  /** Saves messages (e.g. a user input and the assistant reply) as one checkpoint. */
  appendMessages(messages: MessageInput[], source: UpdateSource): Promise<Checkpoint> {
    return this.update({ ops: [{ op: "append", messages }] }, source);
  }

  /** Newest messages (oldest→newest) whose stored token estimates sum to at most maxTokens. */
  async loadRecent(maxTokens: number, opts: LoadRecentOptions = {}): Promise<LoadRecentResult> {
    return unwrap(await (opts.recall ? this.stub.recallRecent(maxTokens, opts, this.#name) : this.stub.loadRecent(maxTokens, opts)));
  }

  /** What a resent message list shares with the live path (compared by canonical text, src/thread/message-hash.ts). */
  async reconcile(messages: ReconcileInput[]): Promise<Reconciled> {
    return unwrap(await this.stub.reconcile(messages));
  }

  /** Makes the given checkpoint's state the head again, as a new branch. */
  async fork(checkpointId: string): Promise<Checkpoint> {
    return unwrap(await this.stub.fork(checkpointId, this.#name));
  }

  get #name(): ThreadName {
    return { tenant: this.tenant, threadId: this.threadId };
  }

  /** This thread's stored Response `id`, or null. */
  async getResponse(id: string): Promise<StoredResponse | null> {
    return unwrap(await this.stub.getResponse(id));
  }

  /** Deletes this thread's stored Response `id`; false when there was none. */
  async deleteResponse(id: string): Promise<boolean> {
    return unwrap(await this.stub.deleteResponse(id));
  }

  /** Deletes the thread and its D1 records; the object forgets them under its lease (so no turn's bookkeeping lands after). */
  async destroy(): Promise<void> {
    unwrap(await this.stub.destroy(this.#name));
  }
}
