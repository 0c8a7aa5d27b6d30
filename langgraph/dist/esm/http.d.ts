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
 * Ops in order, cut into requests of at most `maxOps` ops and `maxBytes` of JSON (the server's caps
 * on one request); an op larger than that on its own goes alone, and the server says which cap it passed.
 */
export declare function inRequests<T>(ops: T[], maxOps: number, maxBytes: number): T[][];
/**
 * How long to wait before retry number `retry` (from 0): the server's Retry-After (seconds or an
 * HTTP date), else 1 s doubling per retry; capped at `maxMs`, and a little less at random so clients
 * limited together do not all come back in the same instant.
 */
export declare function retryWait(headers: Headers, retry: number, maxMs: number, now?: number, random?: () => number): number;
