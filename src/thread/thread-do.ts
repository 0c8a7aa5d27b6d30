import { DurableObject } from "cloudflare:workers";
import { AppError, isAppError } from "../core/errors";
import { estimateTokens } from "../core/tokens";
import { IdGenerator } from "../core/ids";
import { Message } from "../core/message";
import { applyWrite, checkReducerValue, emptyReplayState, reduce, type ReplayState } from "./reducers";
import { chargeHistory, DEFAULT_HISTORY_BYTES } from "./history-bytes";
import { clampTtl, clampWait, Lease, LEASE, RunLeases } from "./run-lease";
import { migrate } from "./sql-schema";
import { messageHash } from "./message-hash";
import { reconcileLive, type Reconciled } from "./reconcile-live";
import { describeIssues } from "../core/zod-issues";
import { LangGraphCheckpoints } from "./langgraph-checkpoints";
import type { DeltaHistory, DeltaQuery, GetQuery, LgOp, ListQuery, StoredTuple } from "./langgraph-checkpoint-types";
import { openToolCalls, ToolAnswerCheck } from "./tool-answers";
import {
  Reducer,
  ThreadUpdate,
  UpdateSource,
  type Write,
  type BeginRunOptions,
  type Checkpoint,
  type History,
  type HistoryEntry,
  type HistoryOptions,
  type LoadRecentOptions,
  type LoadRecentResult,
  type ParsedMessageInput,
  type ParsedUpdate,
  type RpcResult,
  type RunGrant,
  type RunWrite,
  type Source,
  type StatePage,
  type StatePageOptions,
  type ThreadState,
} from "./types";

/** SQLite refuses values over 2 MB; a configured limit above this is clamped. */
const ROW_CEILING = 1_900_000;
/** Bytes of messages one getState page carries, and of writes one history page carries: far below the 32 MiB RPC limit. */
const STATE_PAGE_BYTES = 4 * 1024 * 1024;
const HISTORY_PAGE_BYTES = 8 * 1024 * 1024;
/** Default per-thread cap on stored bytes (messages + channels), when MAX_THREAD_BYTES is unset. */
const DEFAULT_THREAD_BYTES = 16 * 1024 * 1024;
const utf8 = new TextEncoder();

type Head = { id: string; step: number; count: number; clock: string };

/**
 * One conversation thread: messages, channels and checkpoints in SQLite.
 * Every public method returns RpcResult (errors as codes, since RPC drops
 * custom error fields); use ThreadClient rather than the stub directly.
 *
 * Runs are serialized by a lease (beginRun … a write with endRun, or endRun):
 * a run reads the thread and saves its turn while holding it, so turn N+1
 * sees turn N. Writes that carry the holder's token apply at once; any other
 * write (admin repair, fork, delete, a task) queues behind the holder like a
 * run does, so every change lands in acceptance order. Reads never wait.
 */
export class ThreadDO extends DurableObject<Env> {
  private readonly ids = new IdGenerator();
  private head: Head | null = null;
  private ready = false;
  private leases: RunLeases | undefined;
  /** Rows the last loadRecent read from SQLite (for tests and benchmarks: proves O(returned)). */
  lastScanRows = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => this.open());
  }

  // ---- RPC surface -------------------------------------------------------

  /**
   * One page of the state at the head, or at any checkpoint of any branch: the
   * messages from `offset` up to `maxBytes` of them (at least one; channels on
   * the first page only), so no single RPC comes near the 32 MiB limit however
   * big the thread. ThreadClient.getState reads every page of one checkpoint.
   */
  getState(checkpointId?: string | null, page: StatePageOptions = {}): RpcResult<StatePage> {
    return this.run(() => {
      const offset = Math.max(0, Math.trunc(page.offset ?? 0));
      const maxBytes = Math.min(Math.max(1, Math.trunc(page.maxBytes ?? STATE_PAGE_BYTES)), STATE_PAGE_BYTES);
      if (!checkpointId || checkpointId === this.head?.id) return this.livePage(offset, maxBytes);
      const cp = this.checkpointRow(checkpointId);
      const state = this.replay(cp.id);
      const all = [...state.messages.values()];
      const picked: Message[] = [];
      let bytes = 0;
      for (let i = offset; i < all.length; i++) {
        const size = utf8.encode(JSON.stringify(all[i])).length;
        if (picked.length > 0 && bytes + size > maxBytes) break;
        bytes += size;
        picked.push(all[i]!);
      }
      if (offset > 0) state.channels.clear();
      state.messages = new Map(picked.map((m) => [m.id, m]));
      const next = offset + picked.length < all.length ? offset + picked.length : null;
      return { ...toThreadState(cp.id, cp.step, state), next_offset: next };
    });
  }

  /** Checkpoints of every branch, newest first; `before` is the previous page's `next_before`. */
  getHistory(opts: HistoryOptions = {}): RpcResult<History> {
    return this.run(() => {
      const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 20), 1), 100);
      const rows = this.sql
        .exec<CheckpointRow>(
          `SELECT id, parent_id, step, source, created_at FROM checkpoints WHERE id < ? ORDER BY id DESC LIMIT ?`,
          opts.before ?? "~",
          limit + 1,
        )
        .toArray();
      // A page also ends at HISTORY_PAGE_BYTES of writes (at least one checkpoint), so it fits one RPC.
      const checkpoints: HistoryEntry[] = [];
      let bytes = 0;
      for (const r of rows.slice(0, limit)) {
        const writes = this.sql.exec<{ json: string }>(`SELECT json FROM writes WHERE checkpoint_id = ? ORDER BY idx`, r.id).toArray();
        const size = writes.reduce((n, w) => n + w.json.length, 0);
        if (checkpoints.length > 0 && bytes + size > HISTORY_PAGE_BYTES) break;
        bytes += size;
        checkpoints.push({
          ...toCheckpoint(
            r,
            writes.map((w) => JSON.parse(w.json) as Write),
          ),
          is_head: r.id === this.head?.id,
        });
      }
      const more = rows.length > checkpoints.length;
      return { checkpoints, next_before: more ? (checkpoints[checkpoints.length - 1]?.id ?? null) : null };
    });
  }

  /**
   * Applies the ops atomically and writes one checkpoint holding their delta —
   * now, when the thread is free or `run.token` holds its lease; otherwise
   * BEM-038 at once (callers that should wait their turn use write()).
   * `run.endRun` releases the holder's lease in the same event as the save.
   */
  update(input: ThreadUpdate, source: Source, run: RunWrite = {}): RpcResult<Checkpoint> {
    const leases = this.openLeases();
    if (!leases.admits(run.token)) return busy(0, leases);
    return this.admitted(run, () => this.applyUpdate(input, source));
  }

  /** update(), but a write that finds another run holding the thread queues behind it (BEM-038 after the wait bound). */
  write(input: ThreadUpdate, source: Source, run: RunWrite = {}): Promise<RpcResult<Checkpoint>> {
    return this.exclusive(run, () => this.applyUpdate(input, source));
  }

  /** The newest messages whose token estimates fit the budget; reads only what it returns. */
  loadRecent(maxTokens: number, opts: LoadRecentOptions = {}): RpcResult<LoadRecentResult> {
    return this.run(() => this.readRecent(maxTokens, opts));
  }

  /** Resent-history reconciliation: what an incoming list (message hashes) shares with the live path. */
  reconcile(hashes: string[]): RpcResult<Reconciled> {
    return this.run(() => reconcileLive(this.sql, hashes, this.head?.count ?? 0));
  }

  /**
   * Starts a run: waits its turn (FIFO) for the thread's lease, then returns it
   * with, when `recentTokens` is given, the newest window read under it — one
   * round trip for a free thread. BEM-038 when the wait bound passes first.
   */
  async beginRun(opts: BeginRunOptions = {}): Promise<RpcResult<RunGrant>> {
    const leases = this.openLeases();
    const waitMs = clampWait(opts.waitMs);
    const pending = leases.acquire(clampTtl(opts.ttlMs), waitMs, opts.local === true);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) return busy(waitMs, leases);
    try {
      const recent = opts.recentTokens === undefined ? null : this.readRecent(opts.recentTokens, {});
      return { ok: true, value: { lease, recent } };
    } catch (e) {
      leases.release(lease.token);
      if (isAppError(e)) return { ok: false, error: { code: e.code, message: e.message } };
      throw e;
    }
  }

  /** Extends a live lease (long runs renew it); false when the token no longer holds it. */
  renewRun(token: string, ttlMs?: number): RpcResult<Lease | null> {
    return { ok: true, value: this.openLeases().renew(token, clampTtl(ttlMs)) };
  }

  /** Ends a run without a save (failure paths); false when the token no longer held the lease. */
  endRun(token: string): RpcResult<boolean> {
    return { ok: true, value: this.openLeases().release(token) };
  }

  /** The live lease, if any, and how many calls queue behind it (for tests and diagnostics). */
  runStatus(): RpcResult<{ lease: Lease | null; waiting: number }> {
    const leases = this.openLeases();
    return { ok: true, value: { lease: leases.live(), waiting: leases.waiting } };
  }

  /** Continues from an old checkpoint: a new head whose parent is that checkpoint. The old branch stays in history. */
  fork(checkpointId: string, run: RunWrite = {}): Promise<RpcResult<Checkpoint>> {
    return this.exclusive(run, () => this.forkNow(checkpointId));
  }

  private forkNow(checkpointId: string): RpcResult<Checkpoint> {
    return this.run(() => {
      const target = this.checkpointRow(checkpointId);
      const owners = new Map<string, string>();
      const state = this.replay(target.id, owners);
      return this.ctx.storage.transactionSync(() => {
        // Rebuilding the live tables costs O(state at the target); forks are rare.
        this.sql.exec(`DELETE FROM messages`);
        this.sql.exec(`DELETE FROM channels`);
        for (const m of state.messages.values()) this.insertMessage(m, encodeMessage(m), owners.get(m.id) ?? null);
        for (const [name, ch] of state.channels) {
          this.sql.exec(`INSERT INTO channels (name, reducer, value) VALUES (?, ?, ?)`, name, ch.reducer, JSON.stringify(ch.value));
        }
        return this.commitCheckpoint({ id: target.id, step: target.step }, "fork", [], state.messages.size);
      });
    });
  }

  /** Deletes the whole thread (messages, channels, checkpoints), after any running turn has saved. */
  async destroy(): Promise<RpcResult<null>> {
    const leases = this.openLeases();
    const waitMs = clampWait(undefined);
    const pending = leases.acquire(clampTtl(undefined), waitMs);
    const lease = pending instanceof Promise ? await pending : pending;
    if (!lease) return busy(waitMs, leases);
    try {
      await this.ctx.storage.deleteAll();
      this.ready = false;
      this.head = null;
    } finally {
      leases.release(lease.token);
    }
    return { ok: true, value: null };
  }

  // ---- LangGraph checkpointer (own tables; src/thread/langgraph-checkpoints.ts) ----

  lgApply(ops: LgOp[]): RpcResult<{ created: boolean }> {
    return this.run(() => this.langgraph.apply(ops));
  }
  lgGet(q: GetQuery): RpcResult<{ tuple: StoredTuple; history?: DeltaHistory } | null> {
    return this.run(() => this.langgraph.get(q));
  }
  lgList(q: ListQuery): RpcResult<StoredTuple[]> {
    return this.run(() => this.langgraph.list(q));
  }
  lgDeltaHistory(q: DeltaQuery): RpcResult<DeltaHistory> {
    return this.run(() => this.langgraph.deltaHistory(q));
  }
  lgDelete(): RpcResult<{ existed: boolean }> {
    return this.run(() => this.langgraph.deleteAll());
  }
  lgStoredBytes(): RpcResult<number> {
    return this.run(() => this.langgraph.storedBytes());
  }

  private get langgraph(): LangGraphCheckpoints {
    return new LangGraphCheckpoints(this.ctx.storage, Number(this.env.LANGGRAPH_CHUNK_BYTES) || 1_900_000);
  }

  /** The head checkpoint's id (null for an empty thread): the run in the object resolves `continueFrom` with it. */
  protected headId(): string | null {
    if (!this.ready) this.open();
    return this.head?.id ?? null;
  }

  // ---- internals ---------------------------------------------------------

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private open(): void {
    migrate(this.ctx.storage);
    const raw = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'head'`).toArray()[0]?.value;
    this.head = raw ? (JSON.parse(raw) as Head) : null;
    this.ids.restore(this.head?.clock);
    this.ready = true;
  }

  /** Created once per live object (a delete re-creates the tables, not the queue). */
  private openLeases(): RunLeases {
    if (!this.ready) this.open();
    const maxHoldMs = Number(this.env.MAX_RUN_LEASE_MS) || LEASE.defaultMaxHoldMs;
    this.leases ??= new RunLeases(
      {
        load: () => {
          const raw = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'run_lease'`).toArray()[0]?.value;
          const parsed = raw ? Lease.safeParse(JSON.parse(raw)) : undefined;
          return parsed?.success ? parsed.data : null;
        },
        save: (lease) => {
          if (!lease && !this.ready) return; // storage was just deleted: nothing to clear, and nothing to re-create
          if (!this.ready) this.open();
          if (lease) {
            this.sql.exec(`INSERT INTO meta (key, value) VALUES ('run_lease', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, JSON.stringify(lease));
          } else {
            this.sql.exec(`DELETE FROM meta WHERE key = 'run_lease'`);
          }
        },
      },
      Date.now,
      maxHoldMs,
    );
    return this.leases;
  }

  /**
   * Runs a write now when `run.token` holds the lease or nobody holds or awaits
   * it (no extra storage work on a free thread); otherwise queues it as a
   * one-write run behind the others (a stale token from a holder whose lease
   * expired counts as none: its save still lands, in turn). A write with
   * `endRun` releases the lease in the same synchronous event as the save,
   * so no other call sees one without the other.
   */
  private async exclusive<T>(run: RunWrite, write: () => RpcResult<T>): Promise<RpcResult<T>> {
    const leases = this.openLeases();
    if (leases.admits(run.token)) return this.admitted(run, write);
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

  private admitted<T>(run: RunWrite, write: () => RpcResult<T>): RpcResult<T> {
    const result = write();
    if (result.ok && run.endRun && run.token !== undefined) this.openLeases().release(run.token);
    return result;
  }

  private applyUpdate(input: ThreadUpdate, source: Source): RpcResult<Checkpoint> {
    return this.run(() => {
      const parsed = ThreadUpdate.safeParse(input);
      if (!parsed.success) throw new AppError("BEM-035", describeIssues(parsed.error.issues, { root: "(update)" }));
      const src = UpdateSource.safeParse(source);
      if (!src.success) throw new AppError("BEM-035", "Source must be input, loop or update");
      return this.ctx.storage.transactionSync(() => this.applyOps(parsed.data.ops, src.data));
    });
  }

  private readRecent(maxTokens: number, opts: LoadRecentOptions): LoadRecentResult {
    const maxMessages = opts.maxMessages ?? Number.MAX_SAFE_INTEGER;
    const picked: Message[] = [];
    let tokens = 0;
    let truncated = false;
    // The cursor steps lazily: rows past the first one that does not fit are never read.
    const rows = this.sql.exec<{ json: string; tokens: number }>(`SELECT json, tokens FROM messages ORDER BY seq DESC`);
    for (const row of rows) {
      if (tokens + row.tokens > maxTokens || picked.length >= maxMessages) {
        truncated = true;
        break;
      }
      tokens += row.tokens;
      picked.push(JSON.parse(row.json) as Message);
    }
    this.lastScanRows = rows.rowsRead;
    return { messages: picked.reverse(), tokens, truncated };
  }

  private run<T>(fn: () => T): RpcResult<T> {
    try {
      if (!this.ready) this.open();
      return { ok: true, value: fn() };
    } catch (e) {
      if (isAppError(e)) return { ok: false, error: { code: e.code, message: e.message } };
      throw e;
    }
  }

  private get limits() {
    const bytes = Number(this.env.MAX_MESSAGE_BYTES) || 1_048_576;
    return {
      messageBytes: Math.min(bytes, ROW_CEILING),
      threadMessages: Number(this.env.MAX_THREAD_MESSAGES) || 200_000,
      threadBytes: Number(this.env.MAX_THREAD_BYTES) || DEFAULT_THREAD_BYTES,
      historyBytes: Number(this.env.MAX_THREAD_HISTORY_BYTES) || DEFAULT_HISTORY_BYTES,
    };
  }

  /** Runs inside transactionSync: a throw rolls every op back. */
  private applyOps(ops: ParsedUpdate["ops"], source: Source): Checkpoint {
    const limits = this.limits;
    let count = this.head?.count ?? 0;
    const writes: Write[] = [];
    const now = Date.now();
    const cpId = this.ids.next(now); // known before the ops, so each message row records its checkpoint
    // Built on the first new message: the calls open at the thread's tail (a lazy read back to the newest assistant/user message).
    let toolAnswers: ToolAnswerCheck | undefined;
    const answers = () => (toolAnswers ??= new ToolAnswerCheck(openToolCalls(this.tail())));

    const put = (input: ParsedMessageInput, mustExist: boolean) => {
      const existing = input.id ? this.sql.exec<{ created_at: number }>(`SELECT created_at FROM messages WHERE id = ?`, input.id).toArray()[0] : undefined;
      if (mustExist && !existing) throw new AppError("BEM-031", `No message with id '${input.id}' in this thread`);
      const message = Message.parse({ ...input, id: input.id ?? this.ids.next(now), created_at: existing?.created_at ?? now });
      if (!existing) answers().next(message);
      const json = encodeMessage(message);
      if (json.bytes > limits.messageBytes) {
        throw new AppError("BEM-033", `Message is ${json.bytes} bytes; the limit is ${limits.messageBytes}`);
      }
      if (existing) {
        this.sql.exec(
          `UPDATE messages SET role = ?, json = ?, tokens = ?, bytes = ?, hash = ?, cp = ? WHERE id = ?`,
          message.role,
          json.text,
          json.tokens,
          json.bytes,
          messageHash(message),
          cpId,
          message.id,
        );
      } else {
        this.insertMessage(message, json, cpId);
        count++;
      }
      writes.push({ op: "put", message });
    };

    for (const op of ops) {
      switch (op.op) {
        case "append":
          for (const m of op.messages) put(m, false);
          break;
        case "replace":
          put(op.message, true);
          break;
        case "remove": {
          const found = this.sql.exec(`SELECT 1 FROM messages WHERE id = ?`, op.id).toArray().length > 0;
          if (!found) throw new AppError("BEM-031", `No message with id '${op.id}' in this thread`);
          this.sql.exec(`DELETE FROM messages WHERE id = ?`, op.id);
          count--;
          writes.push({ op: "remove", id: op.id });
          break;
        }
        case "remove_all":
          answers().reset();
          this.sql.exec(`DELETE FROM messages`);
          count = 0;
          writes.push({ op: "remove_all" });
          break;
        case "set": {
          const row = this.sql.exec<{ reducer: string; value: string }>(`SELECT reducer, value FROM channels WHERE name = ?`, op.channel).toArray()[0];
          const declared = row ? Reducer.parse(row.reducer) : undefined;
          if (declared && op.reducer && op.reducer !== declared) {
            throw new AppError("BEM-037", `Channel '${op.channel}' is declared ${declared}, not ${op.reducer}`);
          }
          const reducer = declared ?? op.reducer ?? "last_value";
          checkReducerValue(op.channel, reducer, op.value);
          const writeJson = JSON.stringify(op.value);
          const next = JSON.stringify(reduce(reducer, row ? JSON.parse(row.value) : undefined, op.value));
          const bytes = Math.max(utf8.encode(next).length, utf8.encode(writeJson).length);
          if (bytes > limits.messageBytes) {
            throw new AppError("BEM-033", `Channel '${op.channel}' would hold ${bytes} bytes; the limit is ${limits.messageBytes}`);
          }
          this.sql.exec(
            `INSERT INTO channels (name, reducer, value) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`,
            op.channel,
            reducer,
            next,
          );
          writes.push({ op: "set", channel: op.channel, reducer, value: JSON.parse(writeJson) as unknown });
          break;
        }
      }
    }
    if (count > limits.threadMessages) {
      throw new AppError("BEM-034", `A thread holds at most ${limits.threadMessages} messages`);
    }
    // Inside the transaction: over the cap, every op of this update rolls back.
    const held = this.storedBytes();
    if (held > limits.threadBytes) {
      throw new AppError("BEM-097", `The thread would hold ${held} bytes of messages and channels; the limit is ${limits.threadBytes} (MAX_THREAD_BYTES)`);
    }
    return this.commitCheckpoint(this.head, source, writes, count, cpId);
  }

  /** The thread's messages, newest first, parsed as they are read (callers stop early). */
  private *tail(): Generator<Message> {
    for (const r of this.sql.exec<{ json: string }>(`SELECT json FROM messages ORDER BY seq DESC`)) yield JSON.parse(r.json) as Message;
  }

  /** Bytes of the live messages and channels (what a state read returns). */
  private storedBytes(): number {
    const row = this.sql
      .exec<{ b: number }>(
        `SELECT (SELECT COALESCE(SUM(bytes), 0) FROM messages) + (SELECT COALESCE(SUM(length(CAST(value AS BLOB)) + length(CAST(name AS BLOB))), 0) FROM channels) AS b`,
      )
      .toArray()[0];
    return row?.b ?? 0;
  }

  private insertMessage(m: Message, json: EncodedMessage, cp: string | null): void {
    this.sql.exec(
      `INSERT INTO messages (id, role, json, tokens, bytes, created_at, hash, cp) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      m.id,
      m.role,
      json.text,
      json.tokens,
      json.bytes,
      m.created_at,
      messageHash(m),
      cp,
    );
  }

  /** Writes the checkpoint row, its writes and the head pointer (inside the caller's transaction). */
  private commitCheckpoint(parent: { id: string; step: number } | null, source: Source, writes: Write[], count: number, id = this.ids.next()): Checkpoint {
    const cp: Checkpoint = {
      id,
      parent_id: parent?.id ?? null,
      step: (parent?.step ?? 0) + 1,
      source,
      created_at: Date.now(),
      writes,
    };
    this.sql.exec(
      `INSERT INTO checkpoints (id, parent_id, step, source, created_at) VALUES (?, ?, ?, ?, ?)`,
      cp.id,
      cp.parent_id,
      cp.step,
      cp.source,
      cp.created_at,
    );
    const stored = writes.map((w) => JSON.stringify(w));
    chargeHistory(this.sql, stored, this.limits.historyBytes); // 413 BEM-019 past the cap: the caller's transaction rolls back
    for (const [i, json] of stored.entries()) this.sql.exec(`INSERT INTO writes (checkpoint_id, idx, json) VALUES (?, ?, ?)`, cp.id, i, json);
    const head: Head = { id: cp.id, step: cp.step, count, clock: this.ids.clock };
    this.sql.exec(`INSERT INTO meta (key, value) VALUES ('head', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, JSON.stringify(head));
    // Only now, inside the transaction's success path, does memory follow storage.
    this.head = head;
    return cp;
  }

  private checkpointRow(id: string): CheckpointRow {
    const row = this.sql.exec<CheckpointRow>(`SELECT id, parent_id, step, source, created_at FROM checkpoints WHERE id = ?`, id).toArray()[0];
    if (!row) throw new AppError("BEM-032", `No checkpoint '${id}' in this thread`);
    return row;
  }

  /** State at a checkpoint: the writes of its parent chain, root first. `owners` learns which checkpoint put each message. */
  replay(checkpointId: string, owners?: Map<string, string>): ReplayState {
    const state = emptyReplayState();
    const rows = this.sql.exec<{ cp: string; json: string }>(
      `WITH RECURSIVE chain(id, parent_id, depth) AS (
         SELECT id, parent_id, 0 FROM checkpoints WHERE id = ?
         UNION ALL
         SELECT c.id, c.parent_id, chain.depth + 1 FROM checkpoints c JOIN chain ON c.id = chain.parent_id
       )
       SELECT chain.id AS cp, w.json FROM chain JOIN writes w ON w.checkpoint_id = chain.id ORDER BY chain.depth DESC, w.idx ASC`,
      checkpointId,
    );
    for (const row of rows) {
      const w = JSON.parse(row.json) as Write;
      applyWrite(state, w);
      if (owners && w.op === "put") owners.set(w.message.id, row.cp);
    }
    return state;
  }

  private livePage(offset: number, maxBytes: number): StatePage {
    const state = emptyReplayState();
    let bytes = 0;
    let next: number | null = null;
    // The cursor steps lazily: rows past the page are never read.
    for (const r of this.sql.exec<{ json: string; bytes: number }>(`SELECT json, bytes FROM messages ORDER BY seq LIMIT -1 OFFSET ?`, offset)) {
      if (state.messages.size > 0 && bytes + r.bytes > maxBytes) {
        next = offset + state.messages.size;
        break;
      }
      bytes += r.bytes;
      const m = JSON.parse(r.json) as Message;
      state.messages.set(m.id, m);
    }
    if (offset === 0) {
      for (const r of this.sql.exec<{ name: string; reducer: string; value: string }>(`SELECT name, reducer, value FROM channels`)) {
        state.channels.set(r.name, { reducer: Reducer.parse(r.reducer), value: JSON.parse(r.value) as unknown });
      }
    }
    return { ...toThreadState(this.head?.id ?? null, this.head?.step ?? 0, state), next_offset: next };
  }
}

type CheckpointRow = { id: string; parent_id: string | null; step: number; source: string; created_at: number };
type EncodedMessage = { text: string; bytes: number; tokens: number };

function encodeMessage(m: Message): EncodedMessage {
  const text = JSON.stringify(m);
  return { text, bytes: utf8.encode(text).length, tokens: estimateTokens(m) };
}

function toCheckpoint(r: CheckpointRow, writes: Write[]): Checkpoint {
  return { id: r.id, parent_id: r.parent_id, step: r.step, source: r.source as Source, created_at: r.created_at, writes };
}

/** Same shape whether built from the live tables or from replayed checkpoints (channels sorted by name). */
export function toThreadState(checkpointId: string | null, step: number, s: ReplayState): ThreadState {
  const names = [...s.channels.keys()].sort();
  // Own data properties (defineProperty, never assignment): a `__proto__` stored before names were checked stays
  // plain data. Not null-prototype objects here: RPC cannot clone those; ThreadClient rebuilds them without one.
  const channels: ThreadState["channels"] = { messages: [...s.messages.values()] };
  const reducers: ThreadState["reducers"] = {};
  for (const name of names) {
    const ch = s.channels.get(name);
    if (!ch) continue;
    defineOwn(channels, name, ch.value);
    defineOwn(reducers, name, ch.reducer);
  }
  return { checkpoint_id: checkpointId, step, channels, reducers };
}

function defineOwn(o: object, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** BEM-038, saying when to retry: when the holder's lease ends at the latest (MAX_RUN_LEASE_MS bounds it). */
function busy<T>(waitMs: number, leases: RunLeases): RpcResult<T> {
  const retry_after = leases.retryAfterSeconds();
  return { ok: false, error: { code: "BEM-038", message: `Thread is busy with another run; waited ${waitMs} ms (retry after ${retry_after} s)`, retry_after } };
}
