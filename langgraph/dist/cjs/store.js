"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EdgeweaveStore = void 0;
const langgraph_checkpoint_1 = require("@langchain/langgraph-checkpoint");
const http_js_1 = require("./http.js");
/** What one /store/batch request carries at most: the server's 100 ops, and its 1 MiB body less room for the envelope. */
const BATCH_OPS = 100;
const BATCH_BYTES = 1024 * 1024 - 1024;
const toItem = (w) => ({
    namespace: w.namespace,
    key: w.key,
    value: w.value,
    createdAt: new Date(w.created_at),
    updatedAt: new Date(w.updated_at),
});
/** A search's item: ranked by a `query`, with its score (none for an item with nothing indexed, as LangGraph's InMemoryStore). */
const toSearchItem = (w) => (typeof w.score === "number" ? { ...toItem(w), score: w.score } : toItem(w));
/**
 * LangGraph store backed by edgeweave's tenant-scoped D1 items.
 *
 *   const store = new EdgeweaveStore({ baseUrl: "http://localhost:8787", apiKey: KEY });
 *   const graph = builder.compile({ checkpointer, store });
 *
 * A namespace's first two labels are a memory scope (`["organization", "acme"]` is
 * `organization:acme`); the key's grants decide which namespaces it reaches, as for facts.
 * Values are JSON. A `batch` goes out as few requests as the server's caps allow (100
 * ops, 1 MiB and 10,000 JSON items a request), in order, each stored all or nothing; so one item's
 * value is at most about 1 MiB (413 BEM-013, before anything is sent) and about 10,000 keys and
 * array items (the server's 400 BEM-014 for that op's request). A request whose reads would return more
 * than the server's 16 MiB of values (413 BEM-133, nothing stored) is sent again in halves. A search's
 * `query` ranks by the indexed fields (`index`), full text and meaning fused, each item with its `score`.
 */
class EdgeweaveStore extends langgraph_checkpoint_1.BaseStore {
    http;
    fields;
    constructor({ index, ...opts }) {
        super();
        for (const name of ["dims", "embeddings", "embed"]) {
            if (index?.[name] !== undefined) {
                throw new TypeError(`EdgeweaveStore index.${name}: the server embeds with its own embedder (edgeweave docs/concepts/recall-by-meaning.md); pass index.fields only`);
            }
        }
        this.fields = index?.fields;
        this.http = new http_js_1.EdgeweaveHttp(opts);
    }
    async batch(operations) {
        if (operations.length === 0)
            return [];
        const ops = operations.map((op) => {
            if ("namespacePrefix" in op) {
                return { op: "search", namespace_prefix: op.namespacePrefix, filter: op.filter, limit: op.limit ?? 10, offset: op.offset ?? 0, query: op.query };
            }
            if ("value" in op)
                return { op: "put", namespace: op.namespace, key: op.key, value: op.value, index: op.index ?? this.fields };
            if ("key" in op)
                return { op: "get", namespace: op.namespace, key: op.key };
            const prefix = op.matchConditions?.find((m) => m.matchType === "prefix")?.path;
            const suffix = op.matchConditions?.find((m) => m.matchType === "suffix")?.path;
            return { op: "list_namespaces", prefix, suffix, max_depth: op.maxDepth, limit: op.limit, offset: op.offset };
        });
        const results = [];
        for (const op of ops) {
            const size = (0, http_js_1.jsonBytes)(op);
            if (size > BATCH_BYTES) {
                throw new http_js_1.EdgeweaveError(413, "BEM-013", `A store ${op.op} of ${size} bytes is over the ${BATCH_BYTES} bytes one store request carries (an item's value is at most about 1 MiB)`);
            }
        }
        for (const part of (0, http_js_1.inRequests)(ops, BATCH_OPS, BATCH_BYTES))
            results.push(...(await this.send(part)));
        return results.map((r, i) => {
            const op = operations[i];
            if ("namespacePrefix" in op)
                return r.items.map(toSearchItem);
            if ("value" in op)
                return undefined;
            if ("key" in op)
                return r === null ? null : toItem(r);
            return r.namespaces;
        });
    }
    /**
     * One request; one whose reads would return more than the server's MAX_STORE_READ_BYTES (413 BEM-133,
     * nothing of it stored) goes again as two halves, in order, until each fits or is a single op.
     */
    async send(part) {
        try {
            return (await this.http.call("POST", "/store/batch", { ops: part })).results;
        }
        catch (e) {
            if (!(e instanceof http_js_1.EdgeweaveError && e.code === "BEM-133" && part.length > 1))
                throw e;
            const half = Math.ceil(part.length / 2);
            return [...(await this.send(part.slice(0, half))), ...(await this.send(part.slice(half)))];
        }
    }
}
exports.EdgeweaveStore = EdgeweaveStore;
