/** What every edgeweave LangGraph client takes. */
export type EdgeweaveClientOptions = {
    /** The worker's origin, e.g. "http://localhost:8787" (the /v1/langgraph prefix is added). */
    baseUrl: string;
    /** A tenant API key (admin, or a member whose grants cover the threads / namespaces used). */
    apiKey: string;
    /** Defaults to globalThis.fetch (pass one to count calls, add retries or call a service binding). */
    fetch?: typeof fetch;
    /**
     * 429 (the key's rate limit) is retried after the Retry-After the server sends (60 s for
     * edgeweave's limiter), at most `maxRetries` times (default 3) and never waiting longer than
     * `maxWaitMs` at once (default 60,000); then the 429 is thrown. `maxRetries: 0` turns it off.
     */
    retry?: {
        maxRetries?: number;
        maxWaitMs?: number;
    };
};
/** An error answered by edgeweave: `{"error":{"code":"BEM-…","message":"…"}}`. */
export declare class EdgeweaveError extends Error {
    readonly status: number;
    readonly code: string;
    constructor(status: number, code: string, message: string);
}
/** JSON over HTTP to /v1/langgraph with the bearer key. */
export declare class EdgeweaveHttp {
    private readonly opts;
    private readonly base;
    private readonly doFetch;
    constructor(opts: EdgeweaveClientOptions);
    call<T>(method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown): Promise<T>;
}
export declare const pathId: (id: string) => string;
export declare const jsonBytes: (v: unknown) => number;
/**
 * The server's MAX_JSON_ITEMS (src/edge/limits.ts; this package imports nothing of the server): it
 * parses at most this many array items and object keys in one request body, else 400 BEM-014.
 */
export declare const MAX_JSON_ITEMS = 10000;
/**
 * The server's MAX_LANGGRAPH_JSON_ITEMS: what it parses in one checkpointer batch (~16,600 writes of one
 * task, or a checkpoint of ~14,000 changed channels), else 400 BEM-014. The store's batches keep MAX_JSON_ITEMS.
 */
export declare const MAX_LANGGRAPH_JSON_ITEMS = 100000;
/**
 * A value's JSON bytes, and its array items plus object keys as the server counts them once parsed
 * (one stringify: its replacer sees each key and element that is written, after toJSON; a property
 * whose value JSON leaves out is not counted, an array's hole is written as null and is).
 */
export declare function jsonSize(v: unknown): {
    bytes: number;
    items: number;
};
/**
 * Ops in order, cut into requests `{"ops":[…]}` of at most `maxOps` ops, `maxBytes` of JSON and
 * `maxItems` JSON items (the server's caps on one request); an op past a cap on its own goes alone,
 * so the server answers its coded error (BEM-013 bytes, BEM-014 items) for that op only. An op is
 * never cut: the server stores each request in one transaction, so each op lands whole or not at all.
 */
export declare function inRequests<T>(ops: T[], maxOps: number, maxBytes: number, maxItems?: number): T[][];
/**
 * How long to wait before retry number `retry` (from 0): the server's Retry-After (seconds or an
 * HTTP date), else 1 s doubling per retry; capped at `maxMs`, and a little less at random so clients
 * limited together do not all come back in the same instant.
 */
export declare function retryWait(headers: Headers, retry: number, maxMs: number, now?: number, random?: () => number): number;
