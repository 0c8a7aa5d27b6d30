import { BaseCheckpointSaver, copyCheckpoint, maxChannelVersion, TASKS, WRITES_IDX_MAP, } from "@langchain/langgraph-checkpoint";
import { fromBase64, toBase64 } from "./base64.js";
import { EdgeweaveError, EdgeweaveHttp, inRequests, MAX_LANGGRAPH_JSON_ITEMS, pathId } from "./http.js";
const LIST_PAGE = 200;
/** The server's caps on one batch request: 256 ops, a 16 MiB body (less room for the envelope) and MAX_LANGGRAPH_JSON_ITEMS. */
const BATCH_MAX = 256;
const BATCH_BYTES = 16 * 1024 * 1024 - 64 * 1024;
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
export class EdgeweaveSaver extends BaseCheckpointSaver {
    http;
    batchDelayMs;
    queues = new Map();
    /** A failed batch whose ops had all settled already: the thread's next write or read fails with it. */
    unreported = new Map();
    /** Delta channels seen so far: their history is fetched along with a getTuple. */
    deltaChannels = new Set();
    prefetched = new Map();
    constructor(opts) {
        super(opts.serde);
        this.http = new EdgeweaveHttp(opts);
        this.batchDelayMs = opts.batchDelayMs ?? 0;
    }
    /**
     * Versions are "<counter, 32 digits>.<random>": a channel value is stored once per
     * version, and a fork from an old checkpoint counts up from the same numbers as the
     * branch it leaves, so the random part keeps the two branches' values apart.
     * (Graphs accept only savers typed with number versions, though versions are
     * `number | string` everywhere LangGraph reads them; hence the cast.)
     */
    getNextVersion(current) {
        return nextVersion(current);
    }
    async getTuple(config) {
        const threadId = config.configurable?.thread_id;
        if (threadId === undefined)
            return undefined;
        await this.flush(threadId);
        const ns = config.configurable?.checkpoint_ns ?? "";
        const checkpointId = config.configurable?.checkpoint_id || undefined;
        const body = { ns, checkpoint_id: checkpointId, ...(this.deltaChannels.size ? { delta_channels: [...this.deltaChannels] } : {}) };
        const res = await this.http.call("POST", `/threads/${pathId(threadId)}/get`, body);
        if (!res.tuple)
            return undefined;
        if (res.history)
            this.prefetched.set(historyKey(threadId, ns, res.tuple.id), await this.loadHistory(res.history));
        return this.loadTuple(res.tuple);
    }
    async *list(config, options = {}) {
        const threadId = config.configurable?.thread_id;
        if (threadId !== undefined)
            await this.flush(threadId);
        else
            await Promise.all([...this.queues.keys()].map((t) => this.flush(t)));
        const path = threadId === undefined ? "/list" : `/threads/${pathId(threadId)}/list`;
        let remaining = options.limit;
        const first = options.before?.configurable?.checkpoint_id;
        let before = first;
        // Across threads the server visits a window of the tenant's threads per request (100, in id
        // order): each window is listed newest first, then the next (`next_threads_after`).
        let threadsAfter = threadId === undefined ? "" : undefined;
        for (;;) {
            const limit = Math.min(remaining ?? LIST_PAGE, LIST_PAGE);
            const body = {
                ns: config.configurable?.checkpoint_ns,
                checkpoint_id: config.configurable?.checkpoint_id || undefined,
                before,
                limit,
                filter: options.filter,
                threads_after: threadsAfter,
            };
            // A page is cut at about 4 MiB of values (next_before), or at `limit`.
            const { tuples, next_before, next_threads_after } = await this.http.call("POST", path, body);
            for (const t of tuples)
                yield await this.loadTuple(t);
            if (remaining !== undefined)
                remaining -= tuples.length;
            if (remaining !== undefined && remaining <= 0)
                return;
            if (next_before !== undefined || tuples.length === limit) {
                before = next_before ?? tuples[tuples.length - 1].id;
                continue;
            }
            if (next_threads_after === undefined)
                return;
            (threadsAfter = next_threads_after), (before = first);
        }
    }
    async put(config, checkpoint, metadata, newVersions) {
        const threadId = config.configurable?.thread_id;
        if (threadId === undefined)
            throw new Error('EdgeweaveSaver.put: config.configurable is missing "thread_id"');
        const ns = config.configurable?.checkpoint_ns ?? "";
        const { channel_values: values, ...rest } = copyCheckpoint(checkpoint);
        const blobs = await Promise.all(Object.entries(newVersions).map(async ([channel, version]) => ({
            channel,
            version,
            value: values[channel] === undefined ? null : await this.dump(values[channel]),
        })));
        await this.enqueue(threadId, {
            op: "put",
            ns,
            id: checkpoint.id,
            parent_id: config.configurable?.checkpoint_id || null,
            v: checkpoint.v,
            versions: checkpoint.channel_versions,
            checkpoint: await this.dump(rest),
            metadata: await this.dump(metadata),
            blobs,
        });
        return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
    }
    async putWrites(config, writes, taskId, taskPath = "") {
        const threadId = config.configurable?.thread_id;
        const checkpointId = config.configurable?.checkpoint_id;
        if (threadId === undefined)
            throw new Error('EdgeweaveSaver.putWrites: config.configurable is missing "thread_id"');
        if (!checkpointId)
            throw new Error('EdgeweaveSaver.putWrites: config.configurable is missing "checkpoint_id"');
        const wire = await Promise.all(writes.map(async ([channel, value], i) => ({ channel, idx: WRITES_IDX_MAP[channel] ?? i, value: await this.dump(value) })));
        await this.enqueue(threadId, {
            op: "writes",
            ns: config.configurable?.checkpoint_ns ?? "",
            checkpoint_id: checkpointId,
            task_id: taskId,
            task_path: taskPath,
            writes: wire,
        });
    }
    async deleteThread(threadId) {
        await this.flush(threadId);
        try {
            await this.http.call("DELETE", `/threads/${pathId(threadId)}`);
        }
        catch (e) {
            // Deleting a thread that holds no checkpoints is a no-op, as in every LangGraph saver.
            if (!(e instanceof EdgeweaveError && e.code === "BEM-036"))
                throw e;
        }
    }
    /**
     * Deletes old checkpoints of a thread, leaving it resumable: in each namespace (or `ns` alone)
     * the newest `keepLast` stay, or those from checkpoint `before` on; the newest of every
     * namespace always does, and what DeltaChannel channels this saver has seen need. Rewrites
     * history: the key needs `rewrite_thread` (a tenant admin's key; a member's is refused, 403 BEM-022).
     */
    async prune(threadId, opts) {
        await this.flush(threadId);
        const body = {
            ...("keepLast" in opts ? { keep_last: opts.keepLast } : { before: opts.before }),
            ...(opts.ns !== undefined ? { ns: opts.ns } : {}),
            ...(this.deltaChannels.size ? { delta_channels: [...this.deltaChannels] } : {}),
        };
        return this.http.call("POST", `/threads/${pathId(threadId)}/prune`, body);
    }
    /** The walk runs on the server (one request, or none when getTuple brought it along). */
    async getDeltaChannelHistory(options) {
        const { config, channels } = options;
        if (channels.length === 0)
            return {};
        for (const c of channels)
            this.deltaChannels.add(c);
        const threadId = config.configurable?.thread_id;
        if (threadId === undefined)
            return Object.fromEntries(channels.map((c) => [c, { writes: [] }]));
        const ns = config.configurable?.checkpoint_ns ?? "";
        const checkpointId = config.configurable?.checkpoint_id || undefined;
        if (checkpointId) {
            const key = historyKey(threadId, ns, checkpointId);
            const cached = this.prefetched.get(key);
            this.prefetched.delete(key);
            if (cached && channels.every((c) => cached[c] !== undefined))
                return Object.fromEntries(channels.map((c) => [c, cached[c]]));
        }
        await this.flush(threadId);
        const { history } = await this.http.call("POST", `/threads/${pathId(threadId)}/delta-history`, {
            ns,
            checkpoint_id: checkpointId,
            channels,
        });
        return this.loadHistory(history);
    }
    // ---- batching ------------------------------------------------------------
    /**
     * Queues a write; resolves once it is stored. One request per thread is in
     * flight at a time, and writes queued meanwhile go out together after it
     * (a macrotask later, so the graph's next checkpoint, chained on the
     * previous one, joins the writes its step produced).
     */
    enqueue(threadId, op) {
        const failed = this.takeUnreported(threadId);
        if (failed)
            return Promise.reject(failed.error);
        let q = this.queues.get(threadId);
        if (!q)
            this.queues.set(threadId, (q = { ops: [], done: [] }));
        const queue = q;
        // Ops are stored in order and a failed batch fails everything queued behind it, so an
        // op may settle before it is stored as long as a later op, which LangGraph also awaits,
        // is still to settle: a checkpoint settles once anything is queued behind it, and a
        // task's regular writes at once (LangGraph always saves the step's checkpoint after
        // them, and waits for them before it does). Special writes (errors, interrupts) and the
        // last checkpoint settle only when stored. LangGraph chains each checkpoint on the
        // previous one and on the step's delta writes; without this every link would cost a
        // round trip instead of joining one batch. Every op still schedules a send, so a finished
        // task's writes are stored while a parallel task of its step runs on (were this process to
        // die then, the finished task would not rerun on resume).
        for (const d of queue.done) {
            if (!d.put)
                continue;
            d.resolve();
            d.early = true;
        }
        queue.ops.push(op);
        const regularWrites = op.op === "writes" && op.writes.every((w) => w.idx >= 0);
        const stored = new Promise((resolve, reject) => queue.done.push({ resolve, reject, put: op.op === "put", early: regularWrites }));
        if (!queue.inflight && !queue.timer)
            this.schedule(threadId, queue);
        if (regularWrites) {
            void stored.catch(() => { }); // reported through the checkpoint queued behind it
            return Promise.resolve();
        }
        return stored;
    }
    schedule(threadId, q) {
        q.timer = setTimeout(() => void this.send(threadId, q), this.batchDelayMs);
    }
    send(threadId, q) {
        if (q.timer)
            clearTimeout(q.timer);
        q.timer = undefined;
        if (q.inflight)
            return q.inflight;
        const ops = q.ops.splice(0);
        const done = q.done.splice(0);
        if (ops.length === 0)
            return Promise.resolve();
        q.inflight = (async () => {
            let stored = 0;
            try {
                // Cut at the server's caps (ops, bytes, JSON items), never inside an op. Each request is
                // stored in one transaction, so every put and putWrites lands whole or not at all, and in
                // order; the ops queued together are atomic only as far as one request holds them: when a
                // later request fails, the earlier ones stay stored (each settled) and the rest fail.
                for (const part of inRequests(ops, BATCH_MAX, BATCH_BYTES, MAX_LANGGRAPH_JSON_ITEMS)) {
                    await this.http.call("POST", `/threads/${pathId(threadId)}/batch`, { ops: part });
                    for (const d of done.slice(stored, (stored += part.length)))
                        d.resolve();
                }
            }
            catch (e) {
                // Writes queued behind a failed batch would land without their predecessors: fail them too.
                const failed = [...done.slice(stored), ...q.done.splice(0)];
                for (const d of failed)
                    d.reject(e);
                q.ops.length = 0;
                // Nobody awaits these any more (e.g. a finished task's writes sent while its step ran on):
                // the next write fails instead, or a later checkpoint would land without them.
                if (failed.every((d) => d.early))
                    this.unreported.set(threadId, e);
            }
            finally {
                q.inflight = undefined;
                if (q.ops.length > 0)
                    this.schedule(threadId, q);
                else if (this.queues.get(threadId) === q)
                    this.queues.delete(threadId);
            }
        })();
        return q.inflight;
    }
    /** Stores every queued write of the thread now (reads see the thread's own writes). */
    async flush(threadId) {
        for (;;) {
            const q = this.queues.get(threadId);
            if (!q || (!q.inflight && q.ops.length === 0))
                break;
            await (q.inflight ?? this.send(threadId, q));
        }
        const failed = this.takeUnreported(threadId);
        if (failed)
            throw failed.error;
    }
    takeUnreported(threadId) {
        if (!this.unreported.has(threadId))
            return undefined;
        const error = this.unreported.get(threadId);
        this.unreported.delete(threadId);
        return { error };
    }
    // ---- serde ---------------------------------------------------------------
    async dump(value) {
        const [t, bytes] = await this.serde.dumpsTyped(value);
        return { t, b: toBase64(bytes) };
    }
    load(w) {
        return this.serde.loadsTyped(w.t, fromBase64(w.b));
    }
    async loadWrites(writes) {
        return Promise.all(writes.map(async (w) => [w.task_id, w.channel, await this.load(w.value)]));
    }
    async loadHistory(h) {
        const out = {};
        for (const [channel, entry] of Object.entries(h)) {
            const item = { writes: await this.loadWrites(entry.writes) };
            if (entry.seed)
                item.seed = await this.load(entry.seed);
            out[channel] = item;
        }
        return out;
    }
    async loadTuple(t) {
        const rest = (await this.load(t.checkpoint));
        const channel_values = {};
        for (const b of t.blobs)
            channel_values[b.channel] = await this.load(b.value);
        const checkpoint = { ...rest, channel_values };
        if (t.sends) {
            // v<4 checkpoints kept pending sends as the parent's TASKS writes; v4 keeps them in a channel.
            checkpoint.channel_values[TASKS] = await Promise.all(t.sends.map((s) => this.load(s)));
            const versions = Object.values(checkpoint.channel_versions);
            checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
        }
        const configurable = { thread_id: t.thread_id, checkpoint_ns: t.ns, checkpoint_id: t.id };
        const tuple = {
            config: { configurable },
            checkpoint,
            metadata: (await this.load(t.metadata)),
            pendingWrites: await this.loadWrites(t.writes),
        };
        if (t.parent_id !== null)
            tuple.parentConfig = { configurable: { thread_id: t.thread_id, checkpoint_ns: t.ns, checkpoint_id: t.parent_id } };
        return tuple;
    }
}
function nextVersion(current) {
    const n = current === undefined ? 0 : Number.parseInt(String(current).split(".")[0], 10) || 0;
    // The random part from the platform's CSPRNG: a version another key could guess it could write first (the server
    // refuses another key's value of a version with other content, so a guessed version fails the run instead).
    const random = crypto.getRandomValues(new Uint32Array(2));
    return `${String(n + 1).padStart(32, "0")}.${[...random].map((x) => x.toString(16).padStart(8, "0")).join("")}`;
}
const historyKey = (threadId, ns, checkpointId) => JSON.stringify([threadId, ns, checkpointId]);
