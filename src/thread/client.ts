import { AppError } from "../core/errors";
import type { MessageInput } from "../core/message";
import { withoutPrototypes } from "./thread-store";
import { parseThreadId, threadObjectName } from "./thread-id";
import { clampTtl, type Lease } from "./run-lease";
import type { ReconcileInput } from "./message-hash";
import type { Reconciled } from "./reconcile-live";
import type { ApiThreadView, RunAdmission, RunRecord, RunStatus } from "./run-records";
import type { StoredResponse } from "./stored-responses";
import type {
  BeginRunOptions,
  Checkpoint,
  History,
  HistoryOptions,
  LoadRecentOptions,
  LoadRecentResult,
  RpcResult,
  LeaseGrant,
  StatePage,
  StatePageOptions,
  ThreadUpdate,
  ThreadState,
  UpdateOp,
  UpdateSource,
} from "./types";
import { errorText, log } from "../core/log";

type Answer<T> = RpcResult<T> | Promise<RpcResult<T>>;
/** The thread a write or delete is for: the object keeps the tenant's thread list for it, under its lease. */
type ThreadName = { tenant: string; threadId: string };

/**
 * The thread object's RPC surface as a ThreadClient calls it (src/object/thread-object.ts).
 * A run inside the object never goes through here: it calls the object's capabilities directly.
 */
export interface ThreadEndpoint {
  getState(checkpointId: string | null, page?: StatePageOptions): Answer<StatePage>;
  getHistory(opts: HistoryOptions): Answer<History>;
  write(
    body: ThreadUpdate,
    source: UpdateSource,
    run: { token?: string; endRun?: boolean },
    thread: ThreadName,
    opts?: { redactRemoved?: boolean },
  ): Answer<Checkpoint>;
  beginRun(opts: BeginRunOptions): Answer<LeaseGrant>;
  loadRecent(maxTokens: number, opts: LoadRecentOptions): Answer<LoadRecentResult>;
  recallRecent(maxTokens: number, opts: LoadRecentOptions, tenant?: string): Answer<LoadRecentResult>;
  fork(checkpointId: string, run: { token?: string }, thread: ThreadName): Answer<Checkpoint>;
  renewRun(token: string, ttlMs?: number): Answer<Lease | null>;
  endRun(token: string): Answer<boolean>;
  destroy(thread: ThreadName): Answer<null>;
  reconcile(messages: ReconcileInput[]): Answer<Reconciled>;
  apiThreadCreated(): Answer<null>;
  runCancel(runId: string): Answer<boolean>;
  apiThreadView(): Answer<ApiThreadView>;
  runAdmit(r: Omit<RunRecord, "updated_at" | "error">, opts: { reject: boolean; create: boolean; interrupt?: boolean }): Answer<RunAdmission>;
  runGet(runId: string): Answer<RunRecord | null>;
  runList(opts: { limit: number; offset: number; status?: RunStatus }): Answer<RunRecord[]>;
  runAppend(runId: string, events: { event: string; data: string }[], end?: { status: RunStatus; error?: string }): Answer<null>;
  runFollow(runId: string, after: number): ReadableStream<Uint8Array> | Promise<ReadableStream<Uint8Array>>;
  getResponse(id: string): Answer<StoredResponse | null>;
  deleteResponse(id: string): Answer<boolean>;
}

/** An RpcResult as its value, or its error thrown again as the AppError it was (Retry-After kept). */
export function unwrap<T>(r: RpcResult<T>): T {
  if (r.ok) return r.value;
  const { code, message, retry_after } = r.error;
  throw new AppError(code, message, retry_after === undefined ? {} : { headers: { "retry-after": String(retry_after) } });
}

/**
 * The caller's handle on one thread of one tenant. Errors arrive as AppError.
 *
 *   const t = new ThreadClient(env, principal.tenant, threadId);   // BEM-030 on a bad id
 *   const ctx = await t.loadRecent(model.max_tokens);               // newest messages that fit
 *   await t.appendMessages([userMsg, assistantMsg], "input");       // one turn = one checkpoint
 *   await t.update({ ops: [{ op: "set", channel: "todos", value: ["x"], reducer: "append" }] }, "loop");
 *   const s = await t.getState();  s.channels.todos                  // any channel
 *
 * A run holds the thread while it reads and saves (so the next run sees its turn):
 *   const run = await t.beginRun({ recentTokens: budget });         // waits its turn; BEM-038 when busy too long
 *   try { …run.recent… ; await t.appendMessages(turn, "input", { run, endRun: true }) } finally { await run.end() }
 *
 * Writes also record the thread in the tenant's D1 thread list (the object does, under its lease:
 * so no list entry of a write lands after a later delete).
 */
export class ThreadClient {
  readonly threadId: string;
  private readonly stub: ThreadEndpoint;

  constructor(
    env: Env,
    readonly tenant: string,
    threadId: string,
  ) {
    this.threadId = parseThreadId(threadId);
    // The stub's methods answer the same RpcResults, serialized; only its declared types differ.
    this.stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, this.threadId))) as unknown as ThreadEndpoint;
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

  /** The LangGraph API's runs of this thread (src/thread/run-records.ts). */
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

  /**
   * Applies ops atomically as one checkpoint. Accepts `{ops}` or the ops array.
   * Without `run` (or with a run whose lease lapsed) it waits for any running turn to save first.
   * `endRun` ends the run with this save (the next queued run starts on it).
   */
  async update(update: ThreadUpdate | UpdateOp[], source: UpdateSource, opts: RunSave = {}): Promise<Checkpoint> {
    const body: ThreadUpdate = Array.isArray(update) ? { ops: update } : update;
    const cp = unwrap(await this.stub.write(body, source, { token: opts.run?.token, endRun: opts.endRun }, this.#name));
    if (opts.endRun) opts.run?.settle();
    return cp;
  }

  /** Removes a message for good: the new checkpoint drops it and older checkpoints keep it blanked (a deleted conversation item). */
  async removeForGood(messageId: string): Promise<Checkpoint> {
    return unwrap(await this.stub.write({ ops: [{ op: "remove", id: messageId }] }, "update", {}, this.#name, { redactRemoved: true }));
  }

  /** Saves messages (e.g. a user input and the assistant reply) as one checkpoint. */
  appendMessages(messages: MessageInput[], source: UpdateSource, opts: RunSave = {}): Promise<Checkpoint> {
    return this.update({ ops: [{ op: "append", messages }] }, source, opts);
  }

  /**
   * Waits its turn (FIFO) for the thread and holds it for one run; `recentTokens`
   * also reads the newest window under the lease in the same round trip.
   * BEM-038 when another run holds it past `waitMs`. Always end the run:
   * a save with `endRun`, or `run.end()` in a finally.
   */
  async beginRun(opts: BeginRunOptions = {}): Promise<HeldLease> {
    const grant = unwrap(await this.stub.beginRun(opts));
    return new HeldLease(this.stub, grant, clampTtl(opts.ttlMs));
  }

  /** Newest messages (oldest→newest) whose stored token estimates sum to at most maxTokens. */
  async loadRecent(maxTokens: number, opts: LoadRecentOptions = {}): Promise<LoadRecentResult> {
    return unwrap(await (opts.recall ? this.stub.recallRecent(maxTokens, opts, this.tenant) : this.stub.loadRecent(maxTokens, opts)));
  }

  /** What a resent message list shares with the live path (compared by canonical text, src/thread/message-hash.ts). */
  async reconcile(messages: ReconcileInput[]): Promise<Reconciled> {
    return unwrap(await this.stub.reconcile(messages));
  }

  /** Makes the given checkpoint's state the head again, as a new branch. */
  async fork(checkpointId: string, opts: { run?: HeldLease } = {}): Promise<Checkpoint> {
    return unwrap(await this.stub.fork(checkpointId, { token: opts.run?.token }, this.#name));
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

export type RunSave = { run?: HeldLease; endRun?: boolean };

/**
 * A caller's hold on its thread over RPC (from ThreadClient.beginRun): renewed every
 * third of its ttl, so a long holder keeps it and one whose worker died loses it within
 * one ttl. (A run inside the object holds its lease directly: run-lease.ts.)
 */
export class HeldLease {
  #ended = false;
  #lost = false;
  readonly #renewal: ReturnType<typeof setInterval>;

  constructor(
    private readonly stub: ThreadEndpoint,
    private readonly grant: LeaseGrant,
    ttlMs: number,
  ) {
    this.#renewal = setInterval(
      () => {
        Promise.resolve(this.stub.renewRun(this.token, ttlMs)).then(
          (r) => {
            if (r.ok && r.value === null) this.#lost = true;
            if (this.#lost) this.settle();
          },
          () => undefined, // a failed renewal is retried on the next tick; expiry is the backstop
        );
      },
      Math.max(10, Math.floor(ttlMs / 3)),
    );
  }

  get token(): string {
    return this.grant.lease.token;
  }

  get lease(): Lease {
    return this.grant.lease;
  }

  /** The newest window read under the lease, when beginRun asked for one. */
  get recent(): LoadRecentResult | null {
    return this.grant.recent;
  }

  /** True once the lease had expired when a renewal reached the object (another run may have started). */
  get lost(): boolean {
    return this.#lost;
  }

  /** Stops renewing; the lease was released by a save with endRun (or lost). */
  settle(): void {
    this.#ended = true;
    clearInterval(this.#renewal);
  }

  /** Releases the lease unless a save already did. Never throws: expiry is the backstop. */
  async end(): Promise<void> {
    if (this.#ended) return;
    this.settle();
    try {
      await this.stub.endRun(this.token);
    } catch (e) {
      log.error("thread-run-end", { message: errorText(e) });
    }
  }
}
