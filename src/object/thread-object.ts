import { DurableObject } from "cloudflare:workers";
import { spendGuard } from "../pipeline/spend-guard";
import { AppError } from "../core/errors";
import { coded, codedAsync, type RpcResult } from "../core/wire-error";
import { IdGenerator } from "../core/ids";
import { FactsCache } from "../memory/facts-cache";
import { loadWordTable } from "../embed/embedded";
import { embedderOf, embedRecallQuery, knowEmbedders } from "../pipeline/run-embed";
import { pendingUsage } from "../pipeline/usage";
import { errorText, log } from "../core/log";
import { PendingBookkeeping } from "../thread/pending-bookkeeping";
import { BOOKKEEPING_FLUSH_MS, BOOKKEEPING_RETRY_MS, flushBookkeeping } from "./bookkeeping-flush";
import type {
  DeltaHistory,
  DeltaQuery,
  GetQuery,
  Head,
  LgOp,
  ListQuery,
  PruneQuery,
  StoredTuple,
  TuplePage,
  Writer,
} from "../thread/langgraph-checkpoint-types";
import { LangGraphCheckpoints } from "../thread/langgraph-checkpoints";
import type { ReconcileInput } from "../thread/message-hash";
import { openThreadMeta } from "../thread/sql-schema";
import type { Reconciled } from "../thread/reconcile-live";
import { LEASE, ThreadLeases } from "../thread/thread-lease";
import { type ApiThreadView, FINISHED, type RunAdmission, type RunFeed, type RunRecord, RunRecords, type RunStatus, STALE_RUN_MS } from "../thread/run-records";
import { type StoredResponse, StoredResponses } from "../thread/stored-responses";
import { DEFAULT_LIMITS, type StoreLimits, ThreadStore } from "../thread/thread-store";
import { threadObjectName } from "../thread/thread-id";
import { forgetThread } from "../thread/thread-list";
import type {
  Checkpoint,
  History,
  HistoryOptions,
  LoadRecentOptions,
  LoadRecentResult,
  Source,
  StatePage,
  StatePageOptions,
  ThreadUpdate,
} from "../thread/types";
import { answerTurnInObject, holdThread, type ObjectHost, HoldsInFlight, streamTurnInObject } from "./turn-in-object";
import { type SpanExporter, spanExporter } from "../core/otlp";
import type { FinalEvent, ObjectTurnRequest } from "../pipeline/turn-wire";
import type { ThreadCapabilities } from "../pipeline/held-thread";
import type { SummarizeThreadTask } from "../queue/messages";
import type { z } from "@hono/zod-openapi";
import { summaryOf } from "./summarize";

/**
 * One conversation thread as a Durable Object, composed of capabilities that each own
 * their tables and methods: the thread log (src/thread/thread-store.ts), the lease
 * (thread-lease.ts), LangGraph checkpoints (langgraph-checkpoints.ts), stored Responses
 * (stored-responses.ts) and the meta rows (meta.ts: schema version, head, facts bookmark).
 * A stateful turn (streamTurn and answerTurn, turn-in-object.ts) and a summary (summarize) run inside it and call
 * the capabilities directly; everything else reaches them through the RPC methods below.
 *
 * Every RPC method returns RpcResult (errors as codes, since RPC drops custom error
 * fields); callers reach it through threadStub (thread-id.ts), most through ThreadClient.
 * Runs are serialized by the lease, which only code inside the object holds: a run reads
 * the thread and saves its turn while holding it, so turn N+1 sees turn N; any other write
 * (admin repair, fork, delete) queues behind the holder like a run does, so every change
 * lands in acceptance order. Reads never wait.
 *
 * Internals are `#private`: RPC reaches every member of the prototype, TypeScript's
 * `private` ones included, and only these methods are meant to be called.
 */
export class ThreadDO extends DurableObject<Env> {
  /** One id sequence for the object's lifetime, so ids stay increasing across a delete. */
  readonly #ids = new IdGenerator();
  /** Undefined only between a delete of the storage and the next call (which re-creates the tables). */
  #opened: ThreadCapabilities | undefined;
  /** The thread's lease and its queue: one per live object (a delete re-creates the tables, not the queue). An instance field, which RPC does not reach. */
  readonly leases: ThreadLeases;
  /** The runs in this object a cancel can stop (LangGraph API), by their cancel key; memory only, as the runs are. */
  readonly #cancels = new Map<string, AbortController>();
  /** Runs whose bookkeeping is still to land (a delete waits for them). */
  readonly #inFlight = new HoldsInFlight();
  /** The facts its runs read last, served to the next runs while fresh (memory/facts-cache.ts; memory only). */
  readonly #facts = new FactsCache();
  /** The runs' spans, batched across turns and sent under the object's waitUntil (core/otlp.ts). */
  readonly #spans: SpanExporter | undefined;
  /** When the alarm that sends the pending bookkeeping is due (undefined: none set by this instance). */
  #flushAt: number | undefined;
  /** When this instance last sent the pending bookkeeping, and the send under way. */
  #flushedAt = 0;
  #flushing: Promise<void> | undefined;
  /** A delete holds the lease and sends the bookkeeping itself (#flushNow then sends nothing). */
  #deleting = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // SQLite calls are synchronous: the tables are current before the first call is delivered.
    this.#opened = this.#open();
    this.leases = new ThreadLeases(Date.now, Number(env.MAX_RUN_LEASE_MS) || LEASE.defaultMaxHoldMs);
    this.#spans = spanExporter(env, (p) => ctx.waitUntil(p));
    // The embedded embedder's table, read in the background (recall awaits it; until then the vectors wait).
    void loadWordTable(env.ASSETS);
    knowEmbedders(env);
    // Rows a run added just before the object went away, with no alarm set yet, leave soon.
    if (this.#opened.bookkeeping.pending()) this.#flushSoon();
  }

  // ---- the agent run -----------------------------------------------------

  /**
   * Runs one stateful turn; answers a stream of TurnEvents (turn-wire.ts). The run does not
   * depend on the stream being read: a caller that goes away does not stop the save.
   */
  streamTurn(req: ObjectTurnRequest): ReadableStream<Uint8Array> {
    return streamTurnInObject(this.#host(), req);
  }

  /**
   * Runs one turn that streams nothing and answers its result (or error) as one value, once saved;
   * what the run writes after its answer goes on here, under the object's waitUntil.
   */
  answerTurn(req: ObjectTurnRequest): Promise<FinalEvent> {
    return answerTurnInObject(this.#host(), req);
  }

  #host(): ObjectHost {
    const self = this;
    // `capabilities` is read when the turn uses it, after its lease: a delete before then re-creates them.
    const host: ObjectHost = {
      env: this.env,
      id: this.ctx.id,
      get capabilities() {
        return self.#capabilities;
      },
      leases: this.leases,
      inFlight: this.#inFlight,
      facts: this.#facts,
      cancels: this.#cancels,
      waitUntil: (p) => this.ctx.waitUntil(p),
      spans: this.#spans,
      deferred: {
        usage: (u) => {
          self.#capabilities.bookkeeping.addUsage(u);
          self.#deferIfRecent();
        },
        listed: (l) => {
          self.#capabilities.bookkeeping.listed(l);
          self.#deferIfRecent();
        },
        settle: () => self.#settle(),
      },
    };
    return host;
  }

  /**
   * Sends the runs' pending bookkeeping (usage, the thread list) to D1 in one batch. A turn after a
   * quiet spell sends its own as it settles (its usage is in /v1/usage right after the answer, as
   * before); turns that follow within BOOKKEEPING_FLUSH_MS of a send wait for this alarm and leave
   * together, so a busy thread writes D1 about once a second, not once a turn. A failed send keeps
   * the rows and tries again BOOKKEEPING_RETRY_MS later (and with the next batch), until it lands.
   */
  override async alarm(): Promise<void> {
    this.#flushAt = undefined;
    await this.#flushing;
    await this.#flushNow();
  }

  /**
   * Resolves once every run begun so far has ended and no send of bookkeeping is under way (rows
   * waiting for the alarm stay there). A delete waits for this, so a send already on its way to D1
   * cannot list the thread again after the delete; tests wait for it before comparing D1.
   */
  async settled(): Promise<void> {
    await this.#inFlight.idle();
    await this.#flushing;
  }

  /** Rows added soon after a send wait for the alarm (set once per batch; it survives an eviction, the rows are in SQLite). */
  #deferIfRecent(): void {
    if (this.#flushing !== undefined || Date.now() - this.#flushedAt < BOOKKEEPING_FLUSH_MS) this.#flushSoon();
  }

  /** The end of a run: its rows leave now unless an alarm is to send them. */
  async #settle(): Promise<void> {
    if (this.#flushAt === undefined && this.#flushing === undefined) await this.#flushNow();
  }

  #flushNow(): Promise<void> {
    const parts = this.#opened;
    // A delete sends what is owed itself: an alarm's send of the same rows meanwhile could list the thread again after it.
    if (!parts || this.#deleting) return Promise.resolve();
    this.#flushedAt = Date.now();
    const sending = flushBookkeeping(this.env.DB, parts.bookkeeping)
      // Rows that came while it was on its way go with the next batch.
      .then(() => {
        if (parts.bookkeeping.pending()) this.#flushSoon();
      })
      // Logged by the flush; its rows stay in place and are sent again as they were.
      .catch(() => this.#flushSoon(BOOKKEEPING_RETRY_MS))
      .finally(() => {
        if (this.#flushing === sending) this.#flushing = undefined;
      });
    this.#flushing = sending;
    return sending;
  }

  #flushSoon(after = BOOKKEEPING_FLUSH_MS): void {
    if (this.#flushAt !== undefined) return;
    this.#flushAt = Date.now() + after;
    this.ctx.storage.setAlarm(this.#flushAt).catch((e: unknown) => {
      this.#flushAt = undefined;
      log.error("bookkeeping", { message: `setting the flush alarm failed: ${errorText(e)}` });
    });
  }

  // ---- the thread log ----------------------------------------------------

  /**
   * One page of the state at the head, or at any checkpoint of any branch: the
   * messages from `offset` up to `maxBytes` of them (at least one; channels on
   * the first page only), so no single RPC comes near the 32 MiB limit however
   * big the thread. ThreadClient.getState reads every page of one checkpoint.
   */
  getState(checkpointId?: string | null, page: StatePageOptions = {}): RpcResult<StatePage> {
    return coded(() => this.#capabilities.log.statePage(checkpointId, page));
  }

  /** Checkpoints of every branch, newest first; `before` is the previous page's `next_before`. */
  getHistory(opts: HistoryOptions = {}): RpcResult<History> {
    return coded(() => this.#capabilities.log.history(opts));
  }

  /**
   * Applies the ops atomically as one checkpoint holding their delta; a write that finds a run holding the
   * thread queues behind it (BEM-038 after the wait bound). It keeps the tenant's thread list (#listed), so a
   * write from outside the object (a repair, a conversation's items) cannot have its list entry land after a
   * later delete. `redactRemoved`: the messages it removes are blanked in older checkpoints too.
   */
  write(input: ThreadUpdate, source: Source, thread: ThreadName, opts: { redactRemoved?: boolean } = {}): Promise<RpcResult<Checkpoint>> {
    return codedAsync(() =>
      holdThread(this.#host(), this.#named(thread), (room) => {
        const { log, responses } = room.capabilities;
        return room.write(input, source, { end: true, ...(opts.redactRemoved ? { alongside: (cp) => responses.redact(log.redactRemoved(cp)) } : {}) });
      }),
    );
  }

  /** The newest messages whose token estimates fit the budget; reads only what it returns. */
  loadRecent(maxTokens: number, opts: LoadRecentOptions = {}): RpcResult<LoadRecentResult> {
    return coded(() => this.#capabilities.log.recent(maxTokens, opts));
  }

  /**
   * loadRecent with recall, once the embedded table is read (once per isolate: recall by meaning needs it; a failure leaves
   * full-text alone) or a remote embedder's query vector fetched, billed to the thread's tenant and held against its and
   * the thread's budgets (run-embed.ts embedRecallQuery; failing or refused, the result's `warning` says so).
   */
  async recallRecent(maxTokens: number, opts: LoadRecentOptions, thread?: ThreadName): Promise<RpcResult<LoadRecentResult>> {
    await loadWordTable(this.env.ASSETS);
    const guard = thread && spendGuard(this.env, { tenant: thread.tenant, keyId: "" }, thread.threadId, (p) => this.ctx.waitUntil(p));
    const warning = await embedRecallQuery(
      this.#capabilities.log,
      opts.recall,
      (u) => {
        if (thread === undefined) return;
        this.#capabilities.bookkeeping.addUsage(pendingUsage(thread.tenant, u));
        this.#flushSoon();
      },
      guard,
    );
    const loaded = this.loadRecent(maxTokens, opts);
    return loaded.ok && warning !== undefined ? { ok: true, value: { ...loaded.value, warning } } : loaded;
  }

  /** Resent-history reconciliation: what an incoming message list shares with the live path (thread-store.ts). */
  reconcile(messages: ReconcileInput[]): RpcResult<Reconciled> {
    return coded(() => this.#capabilities.log.reconcile(messages));
  }

  /** Continues from an old checkpoint: a new head whose parent is that checkpoint. The old branch stays in history. */
  fork(checkpointId: string, thread: ThreadName): Promise<RpcResult<Checkpoint>> {
    return codedAsync(() => holdThread(this.#host(), this.#named(thread), (room) => room.fork(checkpointId)));
  }

  /**
   * The summarize_thread task, run here like a turn: it holds the thread from its read to its save, as the
   * summary replaces the messages and a turn saved between them would be lost (object/summarize.ts).
   */
  summarize(task: z.infer<typeof SummarizeThreadTask>): Promise<RpcResult<{ summarized: number }>> {
    return codedAsync(() =>
      holdThread(this.#host(), this.#named({ tenant: task.tenant, threadId: task.thread_id }), async (room) => {
        const { ops, summarized } = await summaryOf(this.env, task, room.log.state().channels.messages);
        if (ops.length > 0) await room.write({ ops }, "update", { end: true });
        return { summarized };
      }),
    );
  }

  /**
   * Deletes the whole thread (every capability's tables: one deleteAll), after any running turn
   * has saved and written its bookkeeping, and then its D1 records (list entry, conversation,
   * stored responses of before), all under the lease: so a turn admitted before the delete
   * leaves nothing behind it, and one admitted after starts a new thread under the same id.
   */
  destroy(thread: { tenant: string; threadId: string }): Promise<RpcResult<null>> {
    return codedAsync(async () => {
      this.#named(thread);
      const leases = this.leases;
      const lease = await leases.take();
      try {
        this.#deleting = true;
        await this.settled();
        // The D1 side goes first and must land, or nothing is deleted (503 BEM-171, the client retries): the usage
        // its runs owe (every provider call is billed; deleting the storage would drop the rows), then the list entry,
        // conversation and stored responses (the storage gone with its list entry left would be a thread no one can reach).
        try {
          // The send a failed try left under way, then what is pending (no run adds more: the lease is held, runs settled).
          const bookkeeping = this.#opened?.bookkeeping;
          for (let sends = 0; bookkeeping && sends < 2; sends++) if (!(await flushBookkeeping(this.env.DB, bookkeeping))) break;
          await forgetThread(this.env.DB, thread.tenant, thread.threadId);
        } catch (e) {
          // The rows stay in place; they leave with the object's next send (or the retried delete).
          log.error("thread-delete", { message: errorText(e) });
          this.#flushSoon(BOOKKEEPING_RETRY_MS);
          throw new AppError("BEM-171");
        }
        await this.ctx.storage.deleteAlarm();
        await this.ctx.storage.deleteAll();
        this.#flushAt = undefined;
        this.#opened = undefined;
      } finally {
        this.#deleting = false;
        leases.release(lease.token);
      }
      return null;
    });
  }

  // ---- LangGraph checkpoints (src/thread/langgraph-checkpoints.ts) ----

  /**
   * A checkpointer batch, held like a turn's save: its index row lands under the lease, before any delete behind it
   * (held-thread.ts). `threadQuota`: MAX_THREADS_PER_TENANT as the Worker reads it, as a turn's hand-off carries it.
   */
  lgApply(ops: LgOp[], writer: Writer, thread: ThreadName & { threadQuota: number }): Promise<RpcResult<null>> {
    return codedAsync(() =>
      holdThread(this.#host(), this.#named(thread), async (room) => {
        await room.applyLangGraph(ops, writer, thread.threadQuota);
        return null;
      }),
    );
  }
  lgGet(q: GetQuery): RpcResult<{ tuple: StoredTuple; history?: DeltaHistory } | null> {
    return coded(() => this.#capabilities.langgraph.get(q));
  }
  lgList(q: ListQuery): RpcResult<TuplePage> {
    return coded(() => this.#capabilities.langgraph.list(q));
  }
  lgHeads(q: ListQuery): RpcResult<Head[]> {
    return coded(() => this.#capabilities.langgraph.heads(q));
  }
  lgTuples(heads: Head[], maxBytes: number, atLeastOne: boolean): RpcResult<StoredTuple[]> {
    return coded(() => this.#capabilities.langgraph.tuples(heads, maxBytes, atLeastOne));
  }
  lgPrune(q: PruneQuery): RpcResult<{ deleted: number; kept: number }> {
    return coded(() => this.#capabilities.langgraph.prune(q));
  }
  lgDeltaHistory(q: DeltaQuery): RpcResult<DeltaHistory> {
    return coded(() => this.#capabilities.langgraph.deltaHistory(q));
  }
  lgDelete(thread: ThreadName): Promise<RpcResult<{ existed: boolean }>> {
    return codedAsync(() => holdThread(this.#host(), this.#named(thread), (room) => room.deleteLangGraph()));
  }
  lgStoredBytes(): RpcResult<number> {
    return coded(() => this.#capabilities.langgraph.storedBytes());
  }

  // ---- stored Responses (src/thread/stored-responses.ts; a turn's record is written by its own save) ----

  getResponse(id: string): RpcResult<StoredResponse | null> {
    return coded(() => this.#capabilities.responses.get(id));
  }
  deleteResponse(id: string): RpcResult<boolean> {
    return coded(() => this.#capabilities.responses.delete(id));
  }

  // ---- the LangGraph API's runs (src/thread/run-records.ts) ----

  /** Stops run `runId` if it runs in this object now (nothing of it is saved); false when it does not. */
  runCancel(runId: string): RpcResult<boolean> {
    const cancel = this.#cancels.get(runId);
    cancel?.abort(new AppError("BEM-204", `Run '${runId}' was cancelled; nothing of it was saved`));
    return { ok: true, value: cancel !== undefined };
  }

  /** What LangGraph's thread read needs, in one call: the head state's first page, its checkpoint's entry, whether a run holds the thread, its last run. */
  apiThreadView(): RpcResult<ApiThreadView> {
    return coded(() => {
      const parts = this.#capabilities;
      const page = parts.log.statePage(null);
      const entry = page.checkpoint_id === null ? null : (parts.log.history({ from: page.checkpoint_id, limit: 1 }).checkpoints[0] ?? null);
      const [last] = parts.runs.list({ limit: 1, offset: 0 });
      return { page, entry, busy: this.leases.live() !== null, lastRun: last ? this.#settleStale(last) : null };
    });
  }

  /** LangGraph's POST /threads made the thread: it exists before its first run writes a checkpoint. */
  apiThreadCreated(): RpcResult<null> {
    return coded(() => {
      this.#capabilities.meta.setValue("api_thread", "1");
      return null;
    });
  }

  /**
   * Admits a LangGraph run in one call: the thread must exist (a checkpoint, or made by POST /threads) unless
   * `create`; with `reject`, no run may hold it; then its record is written. What refused it, else the record.
   */
  runAdmit(r: Omit<RunRecord, "updated_at" | "error">, opts: { reject: boolean; create: boolean; interrupt?: boolean }): RpcResult<RunAdmission> {
    return coded(() => {
      const parts = this.#capabilities;
      const exists = parts.meta.head() !== null || parts.meta.value("api_thread") === "1";
      if (!exists && !opts.create) return { refused: "missing" } as const;
      if (opts.reject && this.leases.live() !== null) return { refused: "busy" } as const;
      if (!exists) parts.meta.setValue("api_thread", "1");
      // multitask_strategy interrupt / rollback: the runs under way here stop (saving nothing); this one then takes its turn.
      if (opts.interrupt)
        for (const [key, cancel] of this.#cancels) cancel.abort(new AppError("BEM-204", `Run '${key}' was cancelled by a newer run (multitask_strategy)`));
      return { record: parts.runs.create(r), created: !exists };
    });
  }
  runGet(runId: string): RpcResult<RunRecord | null> {
    return coded(() => {
      const run = this.#capabilities.runs.get(runId);
      return run && this.#settleStale(run);
    });
  }
  runList(opts: { limit: number; offset: number; status?: RunStatus }): RpcResult<RunRecord[]> {
    return coded(() => this.#capabilities.runs.list(opts).map((r) => this.#settleStale(r)));
  }
  runAppend(runId: string, events: { event: string; data: string }[], end?: { status: RunStatus; error?: string }): RpcResult<null> {
    return coded(() => {
      this.#capabilities.runs.append(runId, events, end);
      return null;
    });
  }

  /** The run's kept events after `after`, then its live ones, then its end: NDJSON of RunFeed (one RPC stream, however long the run). */
  runFollow(runId: string, after: number): ReadableStream<Uint8Array> {
    const encoder = new TextEncoder();
    let following: { stop: () => void } | undefined;
    let watch: ReturnType<typeof setInterval> | undefined;
    const stop = () => {
      following?.stop();
      clearInterval(watch);
    };
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        const feed = (f: RunFeed) => {
          try {
            controller.enqueue(encoder.encode(`${JSON.stringify(f)}\n`));
            if (f.type === "end") {
              clearInterval(watch);
              controller.close();
            }
          } catch {
            stop(); // the reader went away
          }
        };
        const run = this.#capabilities.runs.get(runId);
        if (run) this.#settleStale(run);
        following = this.#capabilities.runs.follow(runId, after, feed);
        // A follower of a run whose worker goes away meanwhile is ended too, not left waiting.
        watch = setInterval(() => {
          const now = this.#capabilities.runs.get(runId);
          if (now) this.#settleStale(now);
        }, STALE_RUN_MS / 3);
      },
      cancel: stop,
    });
  }

  /**
   * A run not finished, though nothing holds the thread and it wrote nothing for STALE_RUN_MS, lost the
   * worker that ran it (the thread is at its last checkpoint, as a failed run leaves it): it ends as an error.
   */
  #settleStale(run: RunRecord): RunRecord {
    if (FINISHED.includes(run.status) || this.leases.live() !== null || Date.now() - run.updated_at < STALE_RUN_MS) return run;
    const error = "BEM-001: The run stopped before its end (its worker went away); the thread is at its last checkpoint";
    this.#capabilities.runs.append(run.run_id, [{ event: "error", data: JSON.stringify({ error: "BEM-001", message: error.slice(9) }) }], {
      status: "error",
      error,
    });
    return this.#capabilities.runs.get(run.run_id) ?? run;
  }

  // ---- internals ---------------------------------------------------------

  #open(): ThreadCapabilities {
    const storage = this.ctx.storage;
    const meta = openThreadMeta(storage);
    const limits = limitsOf(this.env);
    return {
      meta,
      // The file's embedder (a run's agent may name its own: run-embed.ts).
      log: ThreadStore.of(storage, { meta, ids: this.#ids, limits, embedder: embedderOf(this.env).turns }),
      responses: new StoredResponses(storage.sql),
      runs: new RunRecords(storage.sql),
      bookkeeping: new PendingBookkeeping(storage.sql, meta),
      langgraph: new LangGraphCheckpoints(storage, meta, Number(this.env.LANGGRAPH_CHUNK_BYTES) || 1_900_000, {
        threadBytes: limits.threadBytes,
        historyBytes: limits.historyBytes,
      }),
    };
  }

  /** The capabilities, re-created (tables and all) on the first call after a delete. */
  get #capabilities(): ThreadCapabilities {
    this.#opened ??= this.#open();
    return this.#opened;
  }

  /** The thread a call names, checked against this object's id (D1 bookkeeping must be the right thread's). */
  #named(thread: ThreadName): ThreadName {
    if (!this.ctx.id.equals(this.env.THREADS.idFromName(threadObjectName(thread.tenant, thread.threadId))))
      throw new AppError("BEM-001", undefined, { internal: "a thread call sent to the wrong thread object" });
    return thread;
  }
}

/** Which thread of which tenant a call is about (the object's name, threadObjectName). */
type ThreadName = { tenant: string; threadId: string };

/** The thread limits configured for this deployment (unset or invalid: the defaults). */
function limitsOf(env: Env): StoreLimits {
  return {
    messageBytes: Number(env.MAX_MESSAGE_BYTES) || DEFAULT_LIMITS.messageBytes,
    threadMessages: Number(env.MAX_THREAD_MESSAGES) || DEFAULT_LIMITS.threadMessages,
    threadBytes: Number(env.MAX_THREAD_BYTES) || DEFAULT_LIMITS.threadBytes,
    historyBytes: Number(env.MAX_THREAD_HISTORY_BYTES) || DEFAULT_LIMITS.historyBytes,
  };
}
