import { assertRoom } from "../auth/quotas";
import { errorText, log } from "../core/log";
import type { LgOp, Writer } from "../thread/langgraph-checkpoint-types";
import { indexThread, unindexThread } from "../thread/langgraph-index";
import type { LangGraphCheckpoints } from "../thread/langgraph-checkpoints";
import type { PendingBookkeeping } from "../thread/pending-bookkeeping";
import type { ThreadMeta } from "../thread/meta";
import type { Lease, ThreadLeases } from "../thread/thread-lease";
import type { RunRecords } from "../thread/run-records";
import type { StoredResponses } from "../thread/stored-responses";
import { type ThreadKind, touchThread } from "../thread/thread-list";
import type { ThreadStore } from "../thread/thread-store";
import type { Checkpoint, Source, ThreadUpdate } from "../thread/types";
import type { TurnIO } from "./turn-io";
import type { TurnResult } from "./turn";

/** The thread object's capabilities (src/object/thread-object.ts), each owning its tables and methods. */
export type ThreadCapabilities = {
  meta: ThreadMeta;
  /** The thread log: messages, channels, checkpoints (src/thread/thread-store.ts). */
  log: ThreadStore;
  responses: StoredResponses;
  /** The LangGraph API's runs and their kept events (src/thread/run-records.ts). */
  runs: RunRecords;
  langgraph: LangGraphCheckpoints;
  /** What the runs owe D1 (usage, the thread list), until the object sends it. */
  bookkeeping: PendingBookkeeping;
};

/** What a run in the thread's object holds it with: whose thread, its capabilities, the lease it took, and where its bookkeeping goes. */
export type HeldThreadOptions = {
  tenant: string;
  threadId: string;
  capabilities: ThreadCapabilities;
  leases: ThreadLeases;
  /** The run's lease, taken in the object (thread-lease.ts). */
  lease: Lease;
  env: Env;
  io: TurnIO;
  /**
   * Stores what the turn's last save keeps beside its checkpoint (a Responses request's record),
   * inside that save's transaction, and returns it as stored; none for other runs.
   */
  keep?: (result: Omit<TurnResult, "state" | "timings"> & { checkpointId: string }) => Record<string, unknown>;
  /** What the thread is listed as when this run creates it (default "conversation"). */
  kind?: ThreadKind;
};

/**
 * A stateful run's thread, from inside its own object: the capabilities are called
 * directly (no RPC, no result wrapping) and the run holds the thread's lease from
 * before it is planned until its last save, so what it continues from is decided
 * against the head it extends, and turn N+1 sees turn N.
 */
export class HeldThread {
  #held = true;
  readonly tenant: string;
  readonly threadId: string;
  readonly capabilities: ThreadCapabilities;
  readonly lease: Lease;
  readonly keep: HeldThreadOptions["keep"];
  readonly kind: ThreadKind;
  readonly #leases: ThreadLeases;
  readonly #env: Env;
  readonly #io: TurnIO;

  constructor(o: HeldThreadOptions) {
    this.tenant = o.tenant;
    this.threadId = o.threadId;
    this.capabilities = o.capabilities;
    this.lease = o.lease;
    this.keep = o.keep;
    this.kind = o.kind ?? "conversation";
    this.#leases = o.leases;
    this.#env = o.env;
    this.#io = o.io;
  }

  get log(): ThreadStore {
    return this.capabilities.log;
  }

  /**
   * Applies one write as a checkpoint under the run's lease (a lease that lapsed past
   * MAX_RUN_LEASE_MS queues it behind the newer holder). `end` releases the lease in the
   * same synchronous event as the save, so the next run starts right on it.
   */
  async write(update: ThreadUpdate, source: Source, opts: { end?: boolean; alongside?: (cp: Checkpoint) => void } = {}): Promise<Checkpoint> {
    const cp = await this.#leases.exclusive(this.#held ? this.lease.token : undefined, () => {
      const saved = this.log.update(update, source, opts.alongside);
      if (opts.end) this.end();
      return saved;
    });
    await this.#list(cp);
    return cp;
  }

  /** Makes an old checkpoint the head again (a branch), under the run's lease. */
  async fork(checkpointId: string): Promise<Checkpoint> {
    const cp = await this.#leases.exclusive(this.#held ? this.lease.token : undefined, () => this.log.fork(checkpointId));
    await this.#list(cp);
    return cp;
  }

  /**
   * LangGraph checkpointer ops, applied under the lease. A put that creates the thread's LangGraph side must fit
   * the tenant's thread quota (413 BEM-017, nothing written) and is indexed before the lease moves on, as a
   * first write is listed: a delete queued behind it removes the row with the checkpoints.
   */
  async applyLangGraph(ops: LgOp[], writer: Writer, threadQuota: number): Promise<void> {
    const { langgraph } = this.capabilities;
    const creates = langgraph.creates(ops);
    if (creates) await assertRoom(this.#env, this.tenant, "threads", threadQuota);
    await this.#leases.exclusive(this.#held ? this.lease.token : undefined, () => langgraph.apply(ops, writer));
    if (creates) await indexThread(this.#env.DB, this.tenant, this.threadId);
  }

  /** Removes the thread's LangGraph side under the lease: its index row first (it must land), then its checkpoints. */
  async deleteLangGraph(): Promise<{ existed: boolean }> {
    await unindexThread(this.#env.DB, this.tenant, this.threadId);
    return this.#leases.exclusive(this.#held ? this.lease.token : undefined, () => this.capabilities.langgraph.deleteAll());
  }

  /** Gives the thread to the next run (a save with end did already: then nothing). */
  end(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#leases.release(this.lease.token);
  }

  /**
   * Keeps the tenant's D1 thread list current. A thread's first write is listed before the
   * run answers; later ones only move its updated_at, with the object's next bookkeeping batch.
   * The write itself is durable already, so a failure is logged, never a failed write.
   */
  async #list(cp: Checkpoint): Promise<void> {
    if (cp.parent_id !== null) return this.#io.listed(this.tenant, this.threadId);
    await touchThread(this.#env.DB, this.tenant, this.threadId, Date.now(), this.kind).catch((e: unknown) =>
      log.error("thread-list", { message: errorText(e) }),
    );
  }
}
