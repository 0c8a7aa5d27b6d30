"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MAX_LANGGRAPH_JSON_ITEMS = exports.MAX_JSON_ITEMS = exports.jsonBytes = exports.pathId = exports.EdgeweaveHttp = exports.EdgeweaveError = void 0;
exports.jsonSize = jsonSize;
exports.inRequests = inRequests;
exports.retryWait = retryWait;
/** An error answered by edgeweave: `{"error":{"code":"BEM-…","message":"…"}}`. */
class EdgeweaveError extends Error {
    status;
    code;
    constructor(status, code, message) {
        super(`${code}: ${message}`);
        this.status = status;
        this.code = code;
        this.name = "EdgeweaveError";
    }
}
exports.EdgeweaveError = EdgeweaveError;
/** JSON over HTTP to /v1/langgraph with the bearer key. */
class EdgeweaveHttp {
    opts;
    base;
    doFetch;
    constructor(opts) {
        this.opts = opts;
        if (!opts.baseUrl)
            throw new Error("EdgeweaveClient: baseUrl is required");
        if (!opts.apiKey)
            throw new Error("EdgeweaveClient: apiKey is required");
        this.base = `${opts.baseUrl.replace(/\/+$/, "")}/v1/langgraph`;
        this.doFetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    }
    async call(method, path, body) {
        const headers = { authorization: `Bearer ${this.opts.apiKey}` };
        if (body !== undefined)
            headers["content-type"] = "application/json";
        const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
        const maxRetries = this.opts.retry?.maxRetries ?? 3;
        let res = await this.doFetch(`${this.base}${path}`, init);
        // A 429 is answered before the request is read, so sending it again is safe, writes included.
        for (let retry = 0; res.status === 429 && retry < maxRetries; retry++) {
            await res.body?.cancel();
            await sleep(retryWait(res.headers, retry, this.opts.retry?.maxWaitMs ?? 60_000));
            res = await this.doFetch(`${this.base}${path}`, init);
        }
        if (res.status === 204)
            return undefined;
        const text = await res.text();
        if (!res.ok) {
            let code = `HTTP-${res.status}`;
            let message = text.slice(0, 500);
            try {
                const parsed = JSON.parse(text);
                code = parsed.error?.code ?? code;
                message = parsed.error?.message ?? message;
            }
            catch {
                // not JSON: keep the text
            }
            throw new EdgeweaveError(res.status, code, message);
        }
        return JSON.parse(text);
    }
}
exports.EdgeweaveHttp = EdgeweaveHttp;
const pathId = (id) => encodeURIComponent(id);
exports.pathId = pathId;
const utf8 = new TextEncoder();
const jsonBytes = (v) => utf8.encode(JSON.stringify(v)).length;
exports.jsonBytes = jsonBytes;
/**
 * The server's MAX_JSON_ITEMS (src/edge/limits.ts; this package imports nothing of the server): it
 * parses at most this many array items and object keys in one request body, else 400 BEM-014.
 */
exports.MAX_JSON_ITEMS = 10_000;
/**
 * The server's MAX_LANGGRAPH_JSON_ITEMS: what it parses in one checkpointer batch (~16,600 writes of one
 * task, or a checkpoint of ~14,000 changed channels), else 400 BEM-014. The store's batches keep MAX_JSON_ITEMS.
 */
exports.MAX_LANGGRAPH_JSON_ITEMS = 100_000;
/**
 * A value's JSON bytes, and its array items plus object keys as the server counts them once parsed
 * (one stringify: its replacer sees each key and element that is written, after toJSON; a property
 * whose value JSON leaves out is not counted, an array's hole is written as null and is).
 */
function jsonSize(v) {
    let calls = 0;
    const text = JSON.stringify(v, function (_key, value) {
        const omitted = !Array.isArray(this) && (value === undefined || typeof value === "function" || typeof value === "symbol");
        if (!omitted)
            calls++;
        return value;
    });
    // The first call is for the root value itself (key ""), which no container holds.
    return { bytes: text === undefined ? 0 : utf8.encode(text).length, items: calls - 1 };
}
/**
 * Ops in order, cut into requests `{"ops":[…]}` of at most `maxOps` ops, `maxBytes` of JSON and
 * `maxItems` JSON items (the server's caps on one request); an op past a cap on its own goes alone,
 * so the server answers its coded error (BEM-013 bytes, BEM-014 items) for that op only. An op is
 * never cut: the server stores each request in one transaction, so each op lands whole or not at all.
 */
function inRequests(ops, maxOps, maxBytes, maxItems = exports.MAX_JSON_ITEMS) {
    const parts = [];
    let part = [];
    let bytes = 0;
    let items = 1; // the envelope's "ops" key
    for (const op of ops) {
        const size = jsonSize(op);
        const opBytes = size.bytes + 1;
        const opItems = size.items + 1; // the op is an item of the ops array
        if (part.length > 0 && (part.length === maxOps || bytes + opBytes > maxBytes || items + opItems > maxItems)) {
            parts.push(part);
            (part = []), (bytes = 0), (items = 1);
        }
        part.push(op);
        bytes += opBytes;
        items += opItems;
    }
    if (part.length)
        parts.push(part);
    return parts;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * How long to wait before retry number `retry` (from 0): the server's Retry-After (seconds or an
 * HTTP date), else 1 s doubling per retry; capped at `maxMs`, and a little less at random so clients
 * limited together do not all come back in the same instant.
 */
function retryWait(headers, retry, maxMs, now = Date.now(), random = Math.random) {
    const value = headers.get("retry-after")?.trim() ?? "";
    const asked = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
    const wait = Number.isFinite(asked) && asked >= 0 ? asked : 1000 * 2 ** retry;
    return Math.round(Math.min(wait, maxMs) * (1 - 0.1 * random()));
}
