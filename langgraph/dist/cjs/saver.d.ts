import type { RunnableConfig } from "@langchain/core/runnables";
import { BaseCheckpointSaver, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type DeltaChannelHistory, type PendingWrite, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { type EdgeweaveClientOptions } from "./http.js";
export type EdgeweaveSaverOptions = EdgeweaveClientOptions & {
    serde?: SerializerProtocol;
    /** Writes issued within this many ms go out as one request (default 0: the next macrotask). */
    batchDelayMs?: number;
};
/**
 * LangGraph checkpointer backed by edgeweave: each thread's checkpoints live in
 * that thread's Durable Object, tenant-scoped by the API key.
 *
 *   const checkpointer = new EdgeweaveSaver({ baseUrl: "http://localhost:8787", apiKey: KEY });
 *   const graph = builder.compile({ checkpointer });
 *
 * Values are serialized here with `serde` and stored as opaque bytes; a
 * checkpoint stores only the channels whose version changed. Writes
 * (`put`, `putWrites`) issued together are sent in order, as one request or as few as the
 * server's caps on one (256 ops, 16 MiB, 100,000 JSON items) allow, never cutting one; each
 * resolves once stored (a checkpoint: once stored, or once a later write is queued
 * behind it); reads first wait for the thread's queued writes. So a one-node graph
 * invoke costs three requests: read, input checkpoint + node writes, final checkpoint.
 */
export declare class EdgeweaveSaver extends BaseCheckpointSaver {
    private readonly http;
    private readonly batchDelayMs;
    private readonly queues;
    /** A failed batch whose ops had all settled already: the thread's next write or read fails with it. */
    private readonly unreported;
    /** Delta channels seen so far: their history is fetched along with a getTuple. */
    private readonly deltaChannels;
    private readonly prefetched;
    constructor(opts: EdgeweaveSaverOptions);
    /**
     * Versions are "<counter, 32 digits>.<random>": a channel value is stored once per
     * version, and a fork from an old checkpoint counts up from the same numbers as the
     * branch it leaves, so the random part keeps the two branches' values apart.
     * (Graphs accept only savers typed with number versions, though versions are
     * `number | string` everywhere LangGraph reads them; hence the cast.)
     */
    getNextVersion(current: number | undefined): number;
    getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
    list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
    put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig>;
    putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
    deleteThread(threadId: string): Promise<void>;
    /**
     * Deletes old checkpoints of a thread, leaving it resumable: in each namespace (or `ns` alone)
     * the newest `keepLast` stay, or those from checkpoint `before` on; the newest of every
     * namespace always does, and what DeltaChannel channels this saver has seen need. Rewrites
     * history: the key needs `rewrite_thread` (a tenant admin's key; a member's is refused, 403 BEM-022).
     */
    prune(threadId: string, opts: {
        keepLast: number;
        ns?: string;
    } | {
        before: string;
        ns?: string;
    }): Promise<{
        deleted: number;
        kept: number;
    }>;
    /** The walk runs on the server (one request, or none when getTuple brought it along). */
    getDeltaChannelHistory(options: {
        config: RunnableConfig;
        channels: string[];
    }): Promise<Record<string, DeltaChannelHistory>>;
    /**
     * Queues a write; resolves once it is stored. One request per thread is in
     * flight at a time, and writes queued meanwhile go out together after it
     * (a macrotask later, so the graph's next checkpoint, chained on the
     * previous one, joins the writes its step produced).
     */
    private enqueue;
    private schedule;
    private send;
    /** Stores every queued write of the thread now (reads see the thread's own writes). */
    private flush;
    private takeUnreported;
    private dump;
    private load;
    private loadWrites;
    private loadHistory;
    private loadTuple;
}
