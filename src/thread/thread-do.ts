import { DurableObject } from "cloudflare:workers";
import { isAppError } from "../core/errors";
import { IdGenerator } from "../core/ids";
import type { DeltaHistory, DeltaQuery, GetQuery, Head, LgOp, ListQuery, PruneQuery, StoredTuple, TuplePage, Writer } from "./langgraph-checkpoint-types";
import { LangGraphCheckpoints } from "./langgraph-checkpoints";
import type { ReconcileInput } from "./message-hash";
import type { Reconciled } from "./reconcile-live";
import { clampTtl, clampWait, LEASE, type Lease, RunLeases } from "./run-lease";
import { deleteResponse, getResponse, putResponse, type StoredResponse } from "./stored-responses";
import { DEFAULT_LIMITS, type StoreLimits, ThreadStore } from "./thread-store";
import type {
  BeginRunOptions,
  Checkpoint,
  History,
  HistoryOptions,
  LoadRecentOptions,
  LoadRecentResult,
  RpcResult,
  RunGrant,
  RunWrite,
  Source,
  StatePage,
  StatePageOptions,
  ThreadUpdate,
} from "./types";

/**
 * One conversation thread as a Durable Object: the RPC surface and the run lease over
 * a ThreadStore (src/thread/thread-store.ts), which holds the messages, channels and
 * checkpoints in the object's SQLite. Every public method returns RpcResult (errors as
 * codes, since RPC drops custom error fields); use ThreadClient rather than the stub.
 *
 * Runs are serialized by a lease (beginRun … a write with endRun, or endRun):
 * a run reads the thread and saves its turn while holding it, so turn N+1
 * sees turn N. Writes that carry the holder's token apply at once; any other
 * write (admin repair, fork, delete, a task) queues behind the holder like a
 * run does, so every change lands in acceptance order. Reads never wait.
 *
 * Internals are `#private`: RPC reaches every member of the prototype, TypeScript's
 * `private` ones included, and only these methods are meant to be called.
 */
export class ThreadDO extends DurableObject<Env> {
  /** One id sequence for the object's lifetime, so ids stay increasing across a delete. */
  readonly #ids = new IdGenerator();
  /** Undefined only between a delete of the storage and the next call (which re-creates the tables). */
  #opened: ThreadStore | undefined;
  #leases: RunLeases | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // SQLite calls are synchronous: the tables are current before the first call is delivered.
    this.#opened = this.#open();
  }

  // ---- RPC surface -------------------------------------------------------

  /**
   * One page of the state at the head, or at any checkpoint of any branch: the
   * messages from `offset` up to `maxBytes` of them (at least one; channels on
   * the first page only), so no single RPC comes near the 32 MiB limit however
   * big the thread. ThreadClient.getState reads every page of one checkpoint.
   */
  getState(checkpointId?: string | null, page: StatePageOptions = {}): RpcResult<StatePage> {
    return this.#run((store) => store.statePage(checkpointId, page));
  }

  /** Checkpoints of every branch, newest first; `before` is the previous page's `next_before`. */
  getHistory(opts: HistoryOptions = {}): RpcResult<History> {
    return this.#run((store) => store.history(opts));
  }

  /**
   * Applies the ops atomically and writes one checkpoint holding their delta —
   * now, when the thread is free or `run.token` holds its lease; otherwise
   * BEM-038 at once (callers that should wait their turn use write()).
   * `run.endRun` releases the holder's lease in the same event as the save.
   */
  update(input: ThreadUpdate, source: Source, run: RunWrite = {}): RpcResult<Checkpoint> {
    const leases = this.#openLeases();
    if (!leases.admits(run.token)) return busy(0, leases);
    return this.#admitted(run, () => this.#run((store) => store.update(input, source)));
  }

  /** update(), but a write that finds another run holding the thread queues behind it (BEM-038 after the wait bound). */
  write(input: ThreadUpdate, source: Source, run: RunWrite = {}): Promise<RpcResult<Checkpoint>> {
    return this.#exclusive(run, () => this.#run((store) => store.update(input, source)));
  }

  /** The newest messages whose token estimates fit the budget; reads only what it returns. */
  loadRecent(maxTokens: number, opts: LoadRecentOptions = {}): RpcResult<LoadRecentResult> {
    return this.#run((store) => store.recent(maxTokens, opts));
  }

  /** Resent-history reconciliation: what an incoming message list shares with the live path (thread-store.ts). */
  reconcile(messages: ReconcileInput[]): RpcResult<Reconciled> {
    return this.#run((store) => store.reconcile(messages));
  }

  /**
   * Starts a run: waits its turn (FIFO) for the thread's lease, then returns it
   * with, when `recentTokens` is given, the newest window read under it — one
   * round trip for a free thread. BEM-038 when the wait bound passes first.
   */
  async beginRun(opts: BeginRunOptions = {}): Promise<RpcResult<RunGrant>> {
    const leases = this.#openLeases();
    const waitMs = clampWait(opts.waitMs);
    const pending = leases.acquire(clampTtl(opts.ttlMs), waitMs, opts.local === true);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) return busy(waitMs, leases);
    try {
      const recent = opts.recentTokens === undefined ? null : this.#store.recent(opts.recentTokens, {});
      return { ok: true, value: { lease, recent } };
    } catch (e) {
      leases.release(lease.token);
      if (isAppError(e)) return { ok: false, error: { code: e.code, message: e.message } };
      throw e;
    }
  }

  /** Extends a live lease (long runs renew it); false when the token no longer holds it. */
  renewRun(token: string, ttlMs?: number): RpcResult<Lease | null> {
    return { ok: true, value: this.#openLeases().renew(token, clampTtl(ttlMs)) };
  }

  /** Ends a run without a save (failure paths); false when the token no longer held the lease. */
  endRun(token: string): RpcResult<boolean> {
    return { ok: true, value: this.#openLeases().release(token) };
  }

  /** The live lease, if any, and how many calls queue behind it (for tests and diagnostics). */
  runStatus(): RpcResult<{ lease: Lease | null; waiting: number }> {
    const leases = this.#openLeases();
    return { ok: true, value: { lease: leases.live(), waiting: leases.waiting } };
  }

  /** Continues from an old checkpoint: a new head whose parent is that checkpoint. The old branch stays in history. */
  fork(checkpointId: string, run: RunWrite = {}): Promise<RpcResult<Checkpoint>> {
    return this.#exclusive(run, () => this.#run((store) => store.fork(checkpointId)));
  }

  /** Deletes the whole thread (messages, channels, checkpoints), after any running turn has saved. */
  async destroy(): Promise<RpcResult<null>> {
    const leases = this.#openLeases();
    const waitMs = clampWait(undefined);
    const pending = leases.acquire(clampTtl(undefined), waitMs);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) return busy(waitMs, leases);
    try {
      await this.ctx.storage.deleteAll();
      this.#opened = undefined;
    } finally {
      leases.release(lease.token);
    }
    return { ok: true, value: null };
  }

  // ---- LangGraph checkpointer (own tables; src/thread/langgraph-checkpoints.ts) ----

  lgApply(ops: LgOp[], writer: Writer): RpcResult<{ created: boolean }> {
    return this.#run(() => this.#langgraph().apply(ops, writer));
  }
  lgGet(q: GetQuery): RpcResult<{ tuple: StoredTuple; history?: DeltaHistory } | null> {
    return this.#run(() => this.#langgraph().get(q));
  }
  lgList(q: ListQuery): RpcResult<TuplePage> {
    return this.#run(() => this.#langgraph().list(q));
  }
  lgHeads(q: ListQuery): RpcResult<Head[]> {
    return this.#run(() => this.#langgraph().heads(q));
  }
  lgTuples(heads: Head[], maxBytes: number, atLeastOne: boolean): RpcResult<StoredTuple[]> {
    return this.#run(() => this.#langgraph().tuples(heads, maxBytes, atLeastOne));
  }
  lgPrune(q: PruneQuery): RpcResult<{ deleted: number; kept: number }> {
    return this.#run(() => this.#langgraph().prune(q));
  }
  lgDeltaHistory(q: DeltaQuery): RpcResult<DeltaHistory> {
    return this.#run(() => this.#langgraph().deltaHistory(q));
  }
  lgDelete(): RpcResult<{ existed: boolean }> {
    return this.#run(() => this.#langgraph().deleteAll());
  }
  lgStoredBytes(): RpcResult<number> {
    return this.#run(() => this.#langgraph().storedBytes());
  }

  // ---- stored Responses (src/thread/stored-responses.ts) ----

  putResponse(r: StoredResponse): RpcResult<null> {
    return this.#run(() => {
      putResponse(this.ctx.storage.sql, r);
      return null;
    });
  }
  getResponse(id: string): RpcResult<StoredResponse | null> {
    return this.#run(() => getResponse(this.ctx.storage.sql, id));
  }
  deleteResponse(id: string): RpcResult<boolean> {
    return this.#run(() => deleteResponse(this.ctx.storage.sql, id));
  }

  /** The stored Response `id` of this thread, for a run continuing it (no RPC: the run is in this object). */
  protected storedResponse(id: string): StoredResponse | null {
    const found = this.getResponse(id);
    return found.ok ? found.value : null;
  }

  /** The head checkpoint's id (null for an empty thread): the run in the object resolves `continueFrom` with it. */
  protected headId(): string | null {
    return this.#store.headId();
  }

  // ---- internals ---------------------------------------------------------

  #open(): ThreadStore {
    return ThreadStore.of(this.ctx.storage, { ids: this.#ids, limits: limitsOf(this.env) });
  }

  /** The store, re-created (tables and all) on the first call after a delete. */
  get #store(): ThreadStore {
    this.#opened ??= this.#open();
    return this.#opened;
  }

  #langgraph(): LangGraphCheckpoints {
    const { threadBytes, historyBytes } = limitsOf(this.env);
    return new LangGraphCheckpoints(this.ctx.storage, Number(this.env.LANGGRAPH_CHUNK_BYTES) || 1_900_000, { threadBytes, historyBytes });
  }

  /** Created once per live object (a delete re-creates the tables, not the queue). */
  #openLeases(): RunLeases {
    this.#opened ??= this.#open(); // like every call after a delete: the tables come back
    const maxHoldMs = Number(this.env.MAX_RUN_LEASE_MS) || LEASE.defaultMaxHoldMs;
    this.#leases ??= new RunLeases(
      {
        load: () => this.#store.loadLease(),
        save: (lease) => {
          if (!lease && !this.#opened) return; // storage was just deleted: nothing to clear, and nothing to re-create
          this.#store.saveLease(lease);
        },
      },
      Date.now,
      maxHoldMs,
    );
    return this.#leases;
  }

  /**
   * Runs a write now when `run.token` holds the lease or nobody holds or awaits
   * it (no extra storage work on a free thread); otherwise queues it as a
   * one-write run behind the others (a stale token from a holder whose lease
   * expired counts as none: its save still lands, in turn). A write with
   * `endRun` releases the lease in the same synchronous event as the save,
   * so no other call sees one without the other.
   */
  async #exclusive<T>(run: RunWrite, write: () => RpcResult<T>): Promise<RpcResult<T>> {
    const leases = this.#openLeases();
    if (leases.admits(run.token)) return this.#admitted(run, write);
    const waitMs = clampWait(undefined);
    const pending = leases.acquire(clampTtl(undefined), waitMs);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) return busy(waitMs, leases);
    try {
      return write();
    } finally {
      leases.release(lease.token);
    }
  }

  #admitted<T>(run: RunWrite, write: () => RpcResult<T>): RpcResult<T> {
    const result = write();
    if (result.ok && run.endRun && run.token !== undefined) this.#openLeases().release(run.token);
    return result;
  }

  /** The store's AppErrors as RpcResult errors (RPC would drop their code); anything else is a 500 and propagates. */
  #run<T>(fn: (store: ThreadStore) => T): RpcResult<T> {
    try {
      return { ok: true, value: fn(this.#store) };
    } catch (e) {
      if (isAppError(e)) return { ok: false, error: { code: e.code, message: e.message } };
      throw e;
    }
  }
}

/** The thread limits configured for this deployment (unset or invalid: the defaults). */
function limitsOf(env: Env): StoreLimits {
  return {
    messageBytes: Number(env.MAX_MESSAGE_BYTES) || DEFAULT_LIMITS.messageBytes,
    threadMessages: Number(env.MAX_THREAD_MESSAGES) || DEFAULT_LIMITS.threadMessages,
    threadBytes: Number(env.MAX_THREAD_BYTES) || DEFAULT_LIMITS.threadBytes,
    historyBytes: Number(env.MAX_THREAD_HISTORY_BYTES) || DEFAULT_LIMITS.historyBytes,
  };
}

/** BEM-038, saying when to retry: when the holder's lease ends at the latest (MAX_RUN_LEASE_MS bounds it). */
function busy<T>(waitMs: number, leases: RunLeases): RpcResult<T> {
  const retry_after = leases.retryAfterSeconds();
  return { ok: false, error: { code: "BEM-038", message: `Thread is busy with another run; waited ${waitMs} ms (retry after ${retry_after} s)`, retry_after } };
}
