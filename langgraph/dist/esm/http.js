/** An error answered by edgeweave: `{"error":{"code":"BEM-…","message":"…"}}`. */
export class EdgeweaveError extends Error {
    status;
    code;
    constructor(status, code, message) {
        super(`${code}: ${message}`);
        this.status = status;
        this.code = code;
        this.name = "EdgeweaveError";
    }
}
/** JSON over HTTP to /v1/langgraph with the bearer key. */
export class EdgeweaveHttp {
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
export const pathId = (id) => encodeURIComponent(id);
const utf8 = new TextEncoder();
export const jsonBytes = (v) => utf8.encode(JSON.stringify(v)).length;
/**
 * Ops in order, cut into requests of at most `maxOps` ops and `maxBytes` of JSON (the server's caps
 * on one request); an op larger than that on its own goes alone, and the server says which cap it passed.
 */
export function inRequests(ops, maxOps, maxBytes) {
    const parts = [];
    let part = [];
    let bytes = 0;
    for (const op of ops) {
        const size = jsonBytes(op) + 1;
        if (part.length > 0 && (part.length === maxOps || bytes + size > maxBytes))
            parts.push(part), (part = []), (bytes = 0);
        part.push(op);
        bytes += size;
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
export function retryWait(headers, retry, maxMs, now = Date.now(), random = Math.random) {
    const value = headers.get("retry-after")?.trim() ?? "";
    const asked = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
    const wait = Number.isFinite(asked) && asked >= 0 ? asked : 1000 * 2 ** retry;
    return Math.round(Math.min(wait, maxMs) * (1 - 0.1 * random()));
}
