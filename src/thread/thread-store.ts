import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { IdGenerator } from "../core/ids";
import { Message } from "../core/message";
import { describeIssues } from "../core/zod-issues";
import { chargeHistory, DEFAULT_HISTORY_BYTES } from "./history-bytes";
import { inJsonBatches } from "./json-batches";
import { canonicalMessage, messageHash, type ReconcileInput } from "./message-hash";
import { anchorOnOpenCalls, overlapWithoutReplies, type Reconciled, reconcileLive, reconcileRows, replyFollows } from "./reconcile-live";
import { TailCache, type TailEntry } from "./tail-cache";
import { applyWrite, checkReducerValue, emptyReplayState, type ReplayState, reduce } from "./reducers";
import type { ThreadMeta } from "./meta";
import { openThreadMeta, type Transaction } from "./sql-schema";
import { type Positions, ThreadRecall } from "./thread-recall";
import type { TurnEmbedder } from "../embed/embedder";
import { CheckpointRow, decodeMessage, decodeWrite, type EncodedMessage, encodeMessage, type Head, toCheckpoint } from "./thread-rows";
import { openToolCalls, ToolAnswerCheck } from "./tool-answers";
import {
  type Checkpoint,
  type History,
  type HistoryEntry,
  type HistoryOptions,
  type LoadRecentOptions,
  type LoadRecentResult,
  type RecallAsk,
  type ParsedMessageInput,
  type ParsedUpdate,
  Reducer,
  type Source,
  type StatePage,
  type StatePageOptions,
  ThreadUpdate,
  type ThreadState,
  UpdateSource,
  type Write,
} from "./types";

/** SQLite refuses values over 2 MB; a configured limit above this is clamped. */
const ROW_CEILING = 1_900_000;
/** Bytes of messages one state page carries, and of writes one history page carries: far below the 32 MiB RPC limit. */
const STATE_PAGE_BYTES = 4 * 1024 * 1024;
const HISTORY_PAGE_BYTES = 8 * 1024 * 1024;
const utf8 = new TextEncoder();

/** A message about to be stored: its tail-cache entry and its stored JSON text. */
type NewRow = { entry: TailEntry; text: string };
const newRow = (m: Message, json: EncodedMessage, cp: string | null): NewRow => ({
  entry: { message: m, tokens: json.tokens, bytes: json.bytes, hash: messageHash(m), role: m.role, cp },
  text: json.text,
});
/** A write of a checkpoint and its stored JSON (built from JSON already encoded: a message's row text, a channel's value). */
type Recorded = { write: Write; text: string };
/** Up to this many writes go in as one statement's bound values (3 each, of the 100 a statement binds). */
const WRITES_BOUND = 33;
const INSERT_MESSAGE = `INSERT INTO messages (id, role, json, tokens, bytes, created_at, hash, cp) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
const INSERT_MESSAGES_JSON =
  `INSERT INTO messages (id, role, json, tokens, bytes, created_at, hash, cp) ` +
  `SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7 FROM json_each(?) ORDER BY key`;

type TailRow = { json: string; tokens: number; bytes: number; hash: string | null; role: string; cp: string | null };

/** What a put needs of a message row already stored. */
type StoredRow = { created_at: number; bytes: number };
/** Ids one prefetch reads at most (their JSON array is one bound value, far below SQLite's 2 MB); a bigger update reads per message. */
const PREFETCH_IDS = 1_000;

/**
 * The stored rows of the messages an update of appends and sets names by id, read in one statement; undefined for any
 * other update (or one naming more than PREFETCH_IDS ids): its puts read each row themselves.
 */
function storedRowsOf(sql: SqlStorage, ops: ParsedUpdate["ops"]): Map<string, StoredRow> | undefined {
  const ids: string[] = [];
  for (const op of ops) {
    if (op.op === "set") continue;
    if (op.op !== "append") return undefined;
    for (const m of op.messages) if (m.id !== undefined) ids.push(m.id);
  }
  if (ids.length > PREFETCH_IDS) return undefined;
  const rows = new Map<string, StoredRow>();
  if (ids.length === 0) return rows;
  const found = sql.exec<StoredRow & { id: string }>(
    `SELECT id, created_at, bytes FROM messages WHERE id IN (SELECT value FROM json_each(?))`,
    JSON.stringify(ids),
  );
  for (const r of found) rows.set(r.id, { created_at: r.created_at, bytes: r.bytes });
  return rows;
}

const LiveBytes = z.object({ messages: z.number(), channels: z.number() });
type LiveBytes = z.infer<typeof LiveBytes>;

/** What one thread may hold (the object reads them from MAX_MESSAGE_BYTES, MAX_THREAD_MESSAGES, MAX_THREAD_BYTES, MAX_THREAD_HISTORY_BYTES). */
export type StoreLimits = { messageBytes: number; threadMessages: number; threadBytes: number; historyBytes: number };

export const DEFAULT_LIMITS: StoreLimits = {
  messageBytes: 1_048_576,
  threadMessages: 200_000,
  threadBytes: 16 * 1024 * 1024,
  historyBytes: DEFAULT_HISTORY_BYTES,
};

export type StoreDeps = {
  transaction: Transaction;
  /** The object's meta rows (the head lives there); opened, and the tables migrated, by whoever opens the object. */
  meta: ThreadMeta;
  limits?: StoreLimits;
  now?: () => number;
  /** Ids continue this generator's sequence (the object keeps one across a delete of its storage). */
  ids?: IdGenerator;
  /** The dense channel of recall (recall-vectors.ts); without it recall is full-text alone. */
  embedder?: TurnEmbedder;
};

/**
 * The thread log: one thread's messages, channels and checkpoints in its SQLite, one
 * capability of the thread's Durable Object (src/object/thread-object.ts), with no RPC
 * and no lease. Its tables are THREAD_LOG_DDL (thread-rows.ts); anything that indexes or
 * reads the messages belongs here, beside the writes that keep it current. Methods throw
 * AppError for a caller's mistake; every write is one transaction and one checkpoint.
 *
 * Constructing it reads the head, which it then keeps in memory: only this store writes
 * it, so a second store writing the same SQLite would leave this one's head stale.
 */
export class ThreadStore {
  /** Rows the last recent() read from SQLite (tests and benchmarks: proves it reads O(returned)). */
  lastScanRows = 0;
  private head: Head | null;
  /** The newest messages, decoded (tail-cache.ts); null until a read builds it, and after any write but an append. */
  private tailCache: TailCache | null = null;
  /** Bytes of the live messages and channels, summed once per store and then kept by every write (MAX_THREAD_BYTES). */
  private live: LiveBytes | null = null;
  /** The history's running total (history-bytes.ts), read once per store and then kept by every write; null after a rollback. */
  private historyTotal: number | null = null;
  /** Reducer and stored size of each channel this store wrote, as committed (setChannel); cleared by a rollback and a fork. */
  private readonly channelsHeld = new Map<string, { reducer: Reducer; bytes: number }>();
  /** Recall of earlier turns: what it learnt between recalls, told of every write (thread-recall.ts). */
  private readonly recall: ThreadRecall;
  private readonly ids: IdGenerator;
  private readonly limits: StoreLimits;
  private readonly now: () => number;
  private readonly transaction: Transaction;
  private readonly meta: ThreadMeta;

  constructor(
    private readonly sql: SqlStorage,
    deps: StoreDeps,
  ) {
    this.transaction = deps.transaction;
    this.recall = new ThreadRecall(sql, deps.transaction, deps.embedder);
    this.now = deps.now ?? Date.now;
    const limits = deps.limits ?? DEFAULT_LIMITS;
    this.limits = { ...limits, messageBytes: Math.min(limits.messageBytes, ROW_CEILING) };
    this.meta = deps.meta;
    this.head = this.meta.head();
    this.ids = deps.ids ?? new IdGenerator();
    this.ids.restore(this.head?.clock);
  }

  /** A store over a Durable Object's storage (its SQL, transactionSync for the transactions, its meta rows: opened here when not given). */
  static of(storage: DurableObjectStorage, deps: Partial<Omit<StoreDeps, "transaction">> = {}): ThreadStore {
    return new ThreadStore(storage.sql, { ...deps, meta: deps.meta ?? openThreadMeta(storage), transaction: (fn) => storage.transactionSync(fn) });
  }

  /** The head checkpoint's id; null for an empty thread. */
  headId(): string | null {
    return this.head?.id ?? null;
  }

  // ---- reads ---------------------------------------------------------------

  /**
   * One page of the state at the head, or at any checkpoint of any branch: the messages
   * from `offset` up to `maxBytes` of them (at least one; channels on the first page only).
   */
  statePage(checkpointId: string | null | undefined, page: StatePageOptions = {}): StatePage {
    const offset = Math.max(0, Math.trunc(page.offset ?? 0));
    const maxBytes = Math.min(Math.max(1, Math.trunc(page.maxBytes ?? STATE_PAGE_BYTES)), STATE_PAGE_BYTES);
    if (!checkpointId || checkpointId === this.head?.id) return this.livePage(offset, maxBytes);
    const cp = this.checkpointRow(checkpointId);
    const state = this.replay(cp.id);
    const all = [...state.messages.values()];
    const picked: Message[] = [];
    let bytes = 0;
    for (let i = offset; i < all.length; i++) {
      const m = all[i];
      if (!m) break;
      const size = utf8.encode(JSON.stringify(m)).length;
      if (picked.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      picked.push(m);
    }
    if (offset > 0) state.channels.clear();
    state.messages = new Map(picked.map((m) => [m.id, m]));
    const next = offset + picked.length < all.length ? offset + picked.length : null;
    return { ...toThreadState(cp.id, cp.step, state), next_offset: next };
  }

  /** The whole state at the head or at `checkpointId` (every page of statePage, for a run in this object: no RPC limit applies). */
  state(checkpointId?: string | null): ThreadState {
    const first = this.statePage(checkpointId);
    const messages = [...first.channels.messages];
    for (let next = first.next_offset; next !== null; ) {
      const page = this.statePage(first.checkpoint_id, { offset: next });
      messages.push(...page.channels.messages);
      next = page.next_offset;
    }
    const { next_offset: _, ...state } = first;
    return withoutPrototypes({ ...state, channels: { ...state.channels, messages } });
  }

  /** Checkpoints of every branch, newest first; `before` is the previous page's `next_before`. */
  history(opts: HistoryOptions = {}): History {
    const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 20), 1), 100);
    // A `before` must be one of the thread's checkpoints (a page's next_before): another string paged from wherever it sorted.
    if (opts.before !== undefined && this.sql.exec(`SELECT 1 FROM checkpoints WHERE id = ?`, opts.before).toArray().length === 0)
      throw new AppError("BEM-011", `before: '${opts.before}' is no checkpoint of this thread; pass the previous page's next_before`);
    // `from`: the page starts at this checkpoint itself (a reader that needs one checkpoint's parent and time).
    if (opts.from !== undefined) this.checkpointRow(opts.from);
    const [bound, start] = opts.from !== undefined ? ["<=", opts.from] : ["<", opts.before ?? "~"];
    const rows = this.sql
      .exec(`SELECT id, parent_id, step, source, created_at FROM checkpoints WHERE id ${bound} ? ORDER BY id DESC LIMIT ?`, start, limit + 1)
      .toArray()
      .map((r) => CheckpointRow.parse(r));
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
          writes.map((w) => decodeWrite(w.json)),
        ),
        is_head: r.id === this.head?.id,
      });
    }
    const more = rows.length > checkpoints.length;
    return { checkpoints, next_before: more ? (checkpoints[checkpoints.length - 1]?.id ?? null) : null };
  }

  /**
   * The newest messages whose token estimates fit the budget: from the tail cache when it
   * holds them (no rows read, nothing decoded), else read from storage, reading only what it
   * returns, and kept as the cache for the next turn.
   */
  recent(maxTokens: number, opts: LoadRecentOptions = {}): LoadRecentResult {
    // With `recall`, part of the budget goes to earlier turns relevant to its query (recall.ts).
    if (opts.recall) return this.recall.window((t) => this.recent(t, { ...opts, recall: undefined }), maxTokens, opts.recall);
    const cached = this.tailCache?.recent(maxTokens, opts);
    if (cached) {
      this.lastScanRows = 0;
      return cached;
    }
    const maxMessages = opts.maxMessages ?? Number.MAX_SAFE_INTEGER;
    const picked: TailEntry[] = [];
    let tokens = 0;
    let bytes = 0;
    let older: number | null = null;
    // The cursor steps lazily: rows past the first one that does not fit are never read.
    const rows = this.sql.exec<TailRow>(`SELECT json, tokens, bytes, hash, role, cp FROM messages ORDER BY seq DESC`);
    for (const row of rows) {
      if (tokens + row.tokens > maxTokens || picked.length >= maxMessages) {
        older = row.tokens;
        break;
      }
      tokens += row.tokens;
      bytes += row.bytes;
      const message = decodeMessage(row.json);
      picked.push({ message, tokens: row.tokens, bytes: row.bytes, hash: row.hash ?? messageHash(message), role: row.role, cp: row.cp });
    }
    this.lastScanRows = rows.rowsRead;
    const messages = picked.map((e) => e.message).reverse();
    if (TailCache.fits(picked.length, bytes)) this.tailCache = TailCache.fromNewestFirst(picked, older);
    return { messages, tokens, truncated: older !== null };
  }

  /** The recall index's work a run's save leaves for after its answer (thread-recall.ts). */
  settleRecallIndex(): void {
    this.recall.settle();
  }

  /** The dense channel's embedder from now on, and its vectors' upkeep (thread-recall.ts): a remote one's are fetched ahead, in the background. */
  get vectors(): Pick<ThreadRecall, "use" | "embedderInUse" | "missingVectors" | "fillVectors"> {
    return this.recall;
  }

  /** Recall over a message list held in memory (a run's whole or replayed state), ranked by this thread's live index (recall.ts). */
  recallOver(messages: readonly Message[], maxTokens: number, ask: RecallAsk): LoadRecentResult {
    return this.recall.over(messages, maxTokens, ask);
  }

  /**
   * Resent-history reconciliation: what an incoming message list shares with the live path. A full or trailing-window resend is matched against
   * the tail cache by each message's canonical text: no rows read and nothing hashed; anything
   * else (a cold cache, a divergence) takes the stored hashes' path.
   */
  reconcile(incoming: readonly ReconcileInput[]): Reconciled {
    const total = this.head?.count ?? 0;
    const newest = incoming.length >= 2 && total > 0 ? this.tailCache?.newest(incoming.length) : undefined;
    if (newest) {
      const rows = newest.map((e) => ({ hash: canonicalMessage(e.message), role: e.role, cp: e.cp }));
      const overlap = reconcileRows(incoming.map(canonicalMessage), [], rows, total, () => null, replyFollows(incoming));
      if (overlap.matched > 0) return overlap;
    }
    const found = reconcileLive(this.sql, incoming.map(messageHash), total, replyFollows(incoming));
    if (found.matched > 0 && found.branch_from === null && !found.reset) return found;
    // A continuation (open calls answered, or the thread's end without its replies) is tried before a divergence,
    // as docs/concepts/resent-history.md orders the rules: [Q1, Q2, Q3] on [Q1, Q2, A2] also starts like the thread and then differs (Q3 ≠ A2),
    // but it continues the thread; read as a divergence it branched and dropped A2 from the head.
    return anchorOnOpenCalls(this.sql, incoming, total) ?? overlapWithoutReplies(this.sql, incoming, total) ?? found;
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
      const w = decodeWrite(row.json);
      applyWrite(state, w);
      if (owners && w.op === "put") owners.set(w.message.id, row.cp);
    }
    return state;
  }

  /** Bytes of the live messages and channels (what a state read returns; MAX_THREAD_BYTES bounds it). */
  storedBytes(): number {
    const b = this.liveBytes();
    return b.messages + b.channels;
  }

  private liveBytes(): LiveBytes {
    this.live ??= this.sql
      .exec(
        `SELECT (SELECT COALESCE(SUM(bytes), 0) FROM messages) AS messages, ` +
          `(SELECT COALESCE(SUM(length(CAST(value AS BLOB)) + length(CAST(name AS BLOB))), 0) FROM channels) AS channels`,
      )
      .toArray()
      .map((r) => LiveBytes.parse(r))[0]!;
    return this.live;
  }

  // ---- writes --------------------------------------------------------------

  /** Validates and applies the ops atomically as one checkpoint holding their delta (BEM-035 for a bad update; `fork` is fork()'s); `alongside` runs inside the transaction. */
  update(input: ThreadUpdate, source: Source, alongside?: (cp: Checkpoint) => void): Checkpoint {
    const parsed = ThreadUpdate.safeParse(input);
    if (!parsed.success) throw new AppError("BEM-035", describeIssues(parsed.error.issues, { root: "(update)", input }));
    const src = UpdateSource.safeParse(source);
    if (!src.success) throw new AppError("BEM-035", "Source must be input, loop or update");
    // `alongside` writes another capability's rows in the same transaction (a stored Response with its checkpoint);
    // what it charges (chargeAlongside) is in the history total the head row is written with, once.
    return this.transact(() => {
      const cp = this.applyOps(parsed.data.ops, src.data);
      alongside?.(cp);
      this.writeHead();
      return cp;
    });
  }

  /**
   * Counts what another capability stores with the checkpoint just written (a stored Response's record, from
   * update()'s `alongside`) into the history total: it is thread history as much as the writes are, and past
   * MAX_THREAD_HISTORY_BYTES it throws 413 BEM-019, rolling the update back with it.
   */
  chargeAlongside(texts: readonly string[]): void {
    if (this.head === null) return;
    this.historyTotal = chargeHistory(this.sql, this.meta, texts, this.limits.historyBytes, this.historyTotal ?? undefined);
  }

  /**
   * Blanks each message `cp` removed wherever an older checkpoint wrote it (its content, name, tool arguments and
   * metadata; ids, roles and tool-call ids stay): a deleted conversation item is then gone from the history and from
   * every older state, whose checkpoints keep their shape. Runs inside update()'s transaction (as its `alongside`);
   * returns every version of the removed messages it blanked.
   */
  redactRemoved(cp: Checkpoint): Message[] {
    const removed: Message[] = [];
    for (const w of cp.writes) {
      if (w.op !== "remove") continue;
      const rows = this.sql
        .exec<{ checkpoint_id: string; idx: number; json: string }>(
          `SELECT checkpoint_id, idx, json FROM writes WHERE json ->> '$.op' = 'put' AND json ->> '$.message.id' = ?`,
          w.id,
        )
        .toArray();
      for (const r of rows) {
        const write = decodeWrite(r.json);
        if (write.op !== "put") continue;
        removed.push(write.message);
        const text = JSON.stringify({ op: "put", message: blanked(write.message) });
        this.sql.exec(`UPDATE writes SET json = ? WHERE checkpoint_id = ? AND idx = ?`, text, r.checkpoint_id, r.idx);
        if (this.historyTotal !== null) this.historyTotal -= utf8.encode(r.json).length - utf8.encode(text).length;
      }
    }
    return removed;
  }

  /** The head row with the history total, written once per transaction, after every charge to it (inside the caller's transaction). */
  private writeHead(): void {
    if (this.head !== null && this.historyTotal !== null) this.meta.setHead(this.head, this.historyTotal);
  }

  /** Continues from an old checkpoint: a new head whose parent is that checkpoint. The old branch stays in history. */
  fork(checkpointId: string): Checkpoint {
    const target = this.checkpointRow(checkpointId);
    const owners = new Map<string, string>();
    const state = this.replay(target.id, owners);
    return this.transact(() => {
      // Rebuilding the live tables costs O(state at the target); forks are rare.
      this.sql.exec(`DELETE FROM messages`);
      this.sql.exec(`DELETE FROM channels`);
      this.insertMessages([...state.messages.values()].map((m) => newRow(m, encodeMessage(m), owners.get(m.id) ?? null)));
      for (const [name, ch] of state.channels) {
        this.sql.exec(`INSERT INTO channels (name, reducer, value) VALUES (?, ?, ?)`, name, ch.reducer, JSON.stringify(ch.value));
      }
      const cp = this.commitCheckpoint({ id: target.id, step: target.step }, "fork", [], state.messages.size);
      this.writeHead();
      this.tailCache = null;
      this.channelsHeld.clear();
      this.recall.forget();
      this.live = null;
      return cp;
    });
  }

  // ---- internals -----------------------------------------------------------

  /**
   * One transaction; a rollback also takes back what memory followed inside it (a throw can come after the
   * checkpoint, from `alongside`): the head and live bytes as they were, the tail cache (appended to in
   * place) and the history total forgotten (the next read or write reads them again).
   */
  private transact<T>(fn: () => T): T {
    const { head, live } = this;
    try {
      return this.transaction(fn);
    } catch (e) {
      this.head = head;
      this.live = live;
      this.tailCache = null;
      this.channelsHeld.clear();
      this.recall.forget();
      this.historyTotal = null;
      throw e;
    }
  }

  /** Runs inside the transaction: a throw rolls every op back. */
  private applyOps(ops: ParsedUpdate["ops"], source: UpdateSource): Checkpoint {
    const limits = this.limits;
    let count = this.head?.count ?? 0;
    const writes: Recorded[] = [];
    const record = (write: Write, text = JSON.stringify(write)) => writes.push({ write, text });
    const now = this.now();
    const cpId = this.ids.next(now); // known before the ops, so each message row records its checkpoint
    // Built on the first new message: the calls open at the thread's tail (a lazy read back to the newest assistant/user message),
    // from the tail cache unless an op of this update already replaced or removed messages (the cache follows only at its end).
    let toolAnswers: ToolAnswerCheck | undefined;
    const answers = () => (toolAnswers ??= new ToolAnswerCheck(openToolCalls(this.tail(onlyAppends))));
    // Kept in step with every op, committed to memory with the checkpoint (a rollback leaves both as they were).
    const bytes = { ...this.liveBytes() };
    const appended: TailEntry[] = [];
    let onlyAppends = true;
    // New messages wait here and go in as one INSERT (insertMessages): the recall index's triggers flush
    // their terms once per statement, so one row per statement cost ~4x per row. Anything that reads or
    // deletes stored messages, and the checkpoint, sends them first.
    const pending = new Map<string, NewRow>();
    // The positions the last INSERT gave its rows, when recall keeps appended rows by position (no read back after).
    let inserted: Positions | undefined;
    const flush = () => {
      if (pending.size > 0) inserted = this.insertMessages([...pending.values()], this.recall.keepsAppended);
      pending.clear();
    };

    // Which of the update's messages are stored already: for appends and sets only (a run's save), read in one statement and
    // then kept by each put; any other update reads each message's row as it comes (its removes and replaces change them).
    const storedRows = storedRowsOf(this.sql, ops);
    const put = (input: ParsedMessageInput & { created_at?: number }, mustExist: boolean) => {
      if (input.id !== undefined && pending.has(input.id)) flush();
      const existing =
        input.id === undefined
          ? undefined
          : storedRows
            ? storedRows.get(input.id)
            : this.sql.exec<StoredRow>(`SELECT created_at, bytes FROM messages WHERE id = ?`, input.id).toArray()[0];
      if (mustExist && !existing) throw new AppError("BEM-031", `No message with id '${input.id}' in this thread`);
      const message = Message.parse({ ...input, id: input.id ?? this.ids.next(now), created_at: existing?.created_at ?? input.created_at ?? now });
      if (!existing) answers().next(message);
      const json = encodeMessage(message);
      if (json.bytes > limits.messageBytes) {
        throw new AppError("BEM-033", `Message is ${json.bytes} bytes; the limit is ${limits.messageBytes}`);
      }
      bytes.messages += json.bytes - (existing?.bytes ?? 0);
      storedRows?.set(message.id, { created_at: message.created_at, bytes: json.bytes });
      if (existing) {
        onlyAppends = false;
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
        const row = newRow(message, json, cpId);
        pending.set(message.id, row);
        appended.push(row.entry);
        count++;
      }
      record({ op: "put", message }, `{"op":"put","message":${json.text}}`);
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
          flush();
          const found = this.sql.exec<{ bytes: number }>(`SELECT bytes FROM messages WHERE id = ?`, op.id).toArray()[0];
          if (!found) throw new AppError("BEM-031", `No message with id '${op.id}' in this thread`);
          this.sql.exec(`DELETE FROM messages WHERE id = ?`, op.id);
          bytes.messages -= found.bytes;
          onlyAppends = false;
          count--;
          record({ op: "remove", id: op.id });
          break;
        }
        case "remove_all":
          flush();
          answers().reset();
          this.sql.exec(`DELETE FROM messages`);
          count = 0;
          bytes.messages = 0;
          onlyAppends = false;
          record({ op: "remove_all" });
          break;
        case "set": {
          const set = this.setChannel(op.channel, op.value, op.reducer);
          bytes.channels += set.addedBytes;
          writes.push(set.recorded);
          break;
        }
      }
    }
    flush();
    if (count > limits.threadMessages) {
      throw new AppError("BEM-034", `A thread holds at most ${limits.threadMessages} messages`);
    }
    // Inside the transaction: over the cap, every op of this update rolls back.
    const held = bytes.messages + bytes.channels;
    if (held > limits.threadBytes) {
      throw new AppError("BEM-097", `The thread would hold ${held} bytes of messages and channels; the limit is ${limits.threadBytes} (MAX_THREAD_BYTES)`);
    }
    const cp = this.commitCheckpoint(this.head, source, writes, count, cpId);
    this.live = bytes;
    if (!onlyAppends) {
      this.tailCache = null;
      this.recall.forget();
    } else {
      this.tailCache?.append(appended);
      this.recall.appended(appended, inserted);
    }
    return cp;
  }

  /** Writes a channel through its reducer (fixed by its first write); returns the write to record (and its JSON) and the bytes it adds. */
  private setChannel(channel: string, value: unknown, asked: Reducer | undefined): { recorded: Recorded; addedBytes: number } {
    // A last_value channel written before by this store (a run's last_route, every turn) needs only its reducer and size: no read.
    const held = this.channelsHeld.get(channel);
    const row =
      held?.reducer === "last_value"
        ? undefined
        : this.sql.exec<{ reducer: string; value: string }>(`SELECT reducer, value FROM channels WHERE name = ?`, channel).toArray()[0];
    const declared = held?.reducer ?? (row ? Reducer.parse(row.reducer) : undefined);
    if (declared && asked && asked !== declared) {
      throw new AppError("BEM-037", `Channel '${channel}' is declared ${declared}, not ${asked}`);
    }
    const reducer = declared ?? asked ?? "last_value";
    checkReducerValue(channel, reducer, value);
    const writeJson = JSON.stringify(value);
    // last_value keeps the write itself (reducers.ts): the same text, encoded once.
    const next = reducer === "last_value" ? writeJson : JSON.stringify(reduce(reducer, row ? JSON.parse(row.value) : undefined, value));
    const nextBytes = utf8.encode(next).length;
    const bytes = next === writeJson ? nextBytes : Math.max(nextBytes, utf8.encode(writeJson).length);
    if (bytes > this.limits.messageBytes) {
      throw new AppError("BEM-033", `Channel '${channel}' would hold ${bytes} bytes; the limit is ${this.limits.messageBytes}`);
    }
    this.sql.exec(
      `INSERT INTO channels (name, reducer, value) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`,
      channel,
      reducer,
      next,
    );
    // The value as it will replay from storage (a JSON round trip), not the caller's object.
    const stored: unknown = JSON.parse(writeJson);
    const heldBytes = held?.bytes ?? (row ? utf8.encode(row.value).length : undefined);
    this.channelsHeld.set(channel, { reducer, bytes: nextBytes });
    const nameBytes = utf8.encode(channel).length;
    const addedBytes = nextBytes + nameBytes - (heldBytes !== undefined ? heldBytes + nameBytes : 0);
    // The write's JSON around the value's own (JSON.stringify of the parsed value gives writeJson back).
    const text = `{"op":"set","channel":${JSON.stringify(channel)},"reducer":${JSON.stringify(reducer)},"value":${writeJson}}`;
    return { recorded: { write: { op: "set", channel, reducer, value: stored }, text }, addedBytes };
  }

  /** The thread's messages, newest first, decoded as they are read (callers stop early). */
  private *tail(cacheCurrent = true): Generator<Message> {
    // The tail cache first (no statement, nothing decoded: the calls open at a turn's save are in it); storage past it.
    const cached = cacheCurrent ? this.tailCache : null;
    if (cached) {
      yield* cached.newestFirst();
      if (cached.whole) return;
    }
    const skip = cached?.size ?? 0;
    for (const r of this.sql.exec<{ json: string }>(`SELECT json FROM messages ORDER BY seq DESC LIMIT -1 OFFSET ?`, skip)) yield decodeMessage(r.json);
  }

  /**
   * Stores `rows` in order: as one statement per INSERT_BATCH_CHARS of their values, sent as one JSON
   * array (a statement binds at most 100 values, and SQLite takes no string over 2 MB); a row larger
   * than that on its own, with its values bound.
   */
  /** Inserts the rows in order; with `positions`, the lowest and highest position they took (from the statements themselves). */
  private insertMessages(rows: readonly NewRow[], positions = false): Positions | undefined {
    let at: Positions | undefined;
    const returning = positions ? " RETURNING seq" : "";
    const took = (cursor: SqlStorageCursor<{ seq: number }>) => {
      if (!positions) return;
      for (const { seq } of cursor) at = { first: Math.min(at?.first ?? seq, seq), last: Math.max(at?.last ?? seq, seq) };
    };
    inJsonBatches(
      rows.map(({ entry: e, text }) => JSON.stringify([e.message.id, e.role, text, e.tokens, e.bytes, e.message.created_at, e.hash, e.cp])),
      (json) => took(this.sql.exec(INSERT_MESSAGES_JSON + returning, json)),
      (i) => {
        const { entry: e, text } = rows[i]!;
        took(this.sql.exec(INSERT_MESSAGE + returning, e.message.id, e.role, text, e.tokens, e.bytes, e.message.created_at, e.hash, e.cp));
      },
    );
    return at;
  }

  /** Writes the checkpoint row and its writes, and moves the head in memory (inside the caller's transaction, which then writes the head row). */
  private commitCheckpoint(
    parent: { id: string; step: number } | null,
    source: Source,
    recorded: readonly Recorded[],
    count: number,
    id = this.ids.next(),
  ): Checkpoint {
    const cp: Checkpoint = {
      id,
      parent_id: parent?.id ?? null,
      step: (parent?.step ?? 0) + 1,
      source,
      created_at: this.now(),
      writes: recorded.map((r) => r.write),
    };
    this.sql.exec(
      `INSERT INTO checkpoints (id, parent_id, step, source, created_at) VALUES (?, ?, ?, ?, ?)`,
      cp.id,
      cp.parent_id,
      cp.step,
      cp.source,
      cp.created_at,
    );
    const stored = recorded.map((r) => r.text);
    // 413 BEM-019 past the cap: the caller's transaction rolls back (and transact() forgets the total).
    const historyTotal = chargeHistory(this.sql, this.meta, stored, this.limits.historyBytes, this.historyTotal ?? undefined);
    this.historyTotal = historyTotal;
    // One statement for the checkpoint's writes, as for the messages (insertMessages): a turn's few as bound values,
    // more as one JSON array (a statement binds at most 100 values); a fork records none.
    if (stored.length > WRITES_BOUND)
      inJsonBatches(
        stored.map((w) => JSON.stringify(w)),
        (json, first) =>
          this.sql.exec(`INSERT INTO writes (checkpoint_id, idx, json) SELECT ?, key + ?, value FROM json_each(?) ORDER BY key`, cp.id, first, json),
        (i) => this.sql.exec(`INSERT INTO writes (checkpoint_id, idx, json) VALUES (?, ?, ?)`, cp.id, i, stored[i]!),
      );
    else if (stored.length > 0)
      this.sql.exec(
        `INSERT INTO writes (checkpoint_id, idx, json) VALUES ${stored.map(() => "(?, ?, ?)").join(", ")}`,
        ...stored.flatMap((w, i) => [cp.id, i, w]),
      );
    // Only now, inside the transaction's success path, does memory follow storage; the caller writes the head row (writeHead).
    this.head = { id: cp.id, step: cp.step, count, clock: this.ids.clock };
    return cp;
  }

  private checkpointRow(id: string): CheckpointRow {
    const row = this.sql.exec(`SELECT id, parent_id, step, source, created_at FROM checkpoints WHERE id = ?`, id).toArray()[0];
    if (!row) throw new AppError("BEM-032", `No checkpoint '${id}' in this thread`);
    return CheckpointRow.parse(row);
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
      const m = decodeMessage(r.json);
      state.messages.set(m.id, m);
    }
    if (offset === 0) {
      for (const r of this.sql.exec<{ name: string; reducer: string; value: string }>(`SELECT name, reducer, value FROM channels`)) {
        const value: unknown = JSON.parse(r.value);
        state.channels.set(r.name, { reducer: Reducer.parse(r.reducer), value });
      }
    }
    return { ...toThreadState(this.head?.id ?? null, this.head?.step ?? 0, state), next_offset: next };
  }
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

/** Channel maps without a prototype: no channel name can reach Object.prototype's machinery (ThreadClient.getState does the same). */
export function withoutPrototypes(state: ThreadState): ThreadState {
  const channels = Object.assign(Object.create(null) as ThreadState["channels"], state.channels);
  const reducers = Object.assign(Object.create(null) as ThreadState["reducers"], state.reducers);
  return { ...state, channels, reducers };
}

function defineOwn(o: object, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A removed message as older checkpoints keep it: where it was and what it answered, none of what it said. */
function blanked(m: Message): Message {
  return {
    id: m.id,
    role: m.role,
    content: "",
    created_at: m.created_at,
    ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
    ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: c.type, function: { name: c.function.name, arguments: "{}" } })) } : {}),
    metadata: { deleted: true },
  };
}
