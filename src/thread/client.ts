import { AppError } from "../errors";
import type { MessageInput } from "./message";
import { touchThread, forgetThread } from "./registry";
import { parseThreadId, threadObjectName } from "./thread-id";
import type {
  Checkpoint,
  History,
  HistoryOptions,
  LoadRecentOptions,
  LoadRecentResult,
  RpcResult,
  StateUpdate,
  ThreadState,
  UpdateOp,
  UpdateSource,
} from "./types";

function unwrap<T>(r: RpcResult<T>): T {
  if (r.ok) return r.value;
  throw new AppError(r.error.code, r.error.message);
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
 * Writes also record the thread in the tenant's D1 thread list.
 */
export class ThreadClient {
  readonly threadId: string;
  private readonly stub: DurableObjectStub<import("./thread-do").ThreadDO>;

  constructor(
    private readonly env: Env,
    readonly tenant: string,
    threadId: string,
    /** When given, list bookkeeping after a thread's first write runs after the response. */
    private readonly opts: { waitUntil?: (p: Promise<unknown>) => void } = {},
  ) {
    this.threadId = parseThreadId(threadId);
    this.stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, this.threadId)));
  }

  async getState(checkpointId?: string): Promise<ThreadState> {
    const state = unwrap((await this.stub.getState(checkpointId ?? null)) as RpcResult<ThreadState>);
    return { ...state, thread_id: this.threadId };
  }

  async getHistory(opts: HistoryOptions = {}): Promise<History> {
    return unwrap((await this.stub.getHistory(opts)) as RpcResult<History>);
  }

  /** Applies ops atomically as one checkpoint. Accepts `{ops}` or the ops array. */
  async update(update: StateUpdate | UpdateOp[], source: UpdateSource): Promise<Checkpoint> {
    const body: StateUpdate = Array.isArray(update) ? { ops: update } : update;
    const cp = unwrap((await this.stub.update(body, source)) as RpcResult<Checkpoint>);
    await this.list(cp);
    return cp;
  }

  /** Saves messages (e.g. a user input and the assistant reply) as one checkpoint. */
  appendMessages(messages: MessageInput[], source: UpdateSource): Promise<Checkpoint> {
    return this.update({ ops: [{ op: "append", messages }] }, source);
  }

  /** Newest messages (oldest→newest) whose stored token estimates sum to at most maxTokens. */
  async loadRecent(maxTokens: number, opts: LoadRecentOptions = {}): Promise<LoadRecentResult> {
    return unwrap((await this.stub.loadRecent(maxTokens, opts)) as RpcResult<LoadRecentResult>);
  }

  /** Makes the given checkpoint's state the head again, as a new branch. */
  async fork(checkpointId: string): Promise<Checkpoint> {
    const cp = unwrap((await this.stub.fork(checkpointId)) as RpcResult<Checkpoint>);
    await this.list(cp);
    return cp;
  }

  /**
   * Keeps the tenant's thread list current. The write itself is already durable,
   * so a failure here is logged, never reported as a failed write (a retry would
   * store the turn twice); the next write repairs the list. A new thread is listed
   * before we answer; later writes only move updated_at, after the response.
   */
  private async list(cp: Checkpoint): Promise<void> {
    const touch = touchThread(this.env.DB, this.tenant, this.threadId).catch((e: unknown) =>
      console.error(JSON.stringify({ level: "error", where: "thread-list", message: e instanceof Error ? e.message : String(e) })),
    );
    if (cp.parent_id === null || !this.opts.waitUntil) await touch;
    else this.opts.waitUntil(touch);
  }

  async destroy(): Promise<void> {
    unwrap((await this.stub.destroy()) as RpcResult<null>);
    await forgetThread(this.env.DB, this.tenant, this.threadId);
  }
}
