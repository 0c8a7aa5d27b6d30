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
  retry?: { maxRetries?: number; maxWaitMs?: number };
};

/** An error answered by edgeweave: `{"error":{"code":"BEM-…","message":"…"}}`. */
export class EdgeweaveError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = "EdgeweaveError";
  }
}

/** JSON over HTTP to /v1/langgraph with the bearer key. */
export class EdgeweaveHttp {
  private readonly base: string;
  private readonly doFetch: typeof fetch;

  constructor(private readonly opts: EdgeweaveClientOptions) {
    if (!opts.baseUrl) throw new Error("EdgeweaveClient: baseUrl is required");
    if (!opts.apiKey) throw new Error("EdgeweaveClient: apiKey is required");
    this.base = `${opts.baseUrl.replace(/\/+$/, "")}/v1/langgraph`;
    this.doFetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  async call<T>(method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.opts.apiKey}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
    const maxRetries = this.opts.retry?.maxRetries ?? 3;
    let res = await this.doFetch(`${this.base}${path}`, init);
    // A 429 is answered before the request is read, so sending it again is safe, writes included.
    for (let retry = 0; res.status === 429 && retry < maxRetries; retry++) {
      await res.body?.cancel();
      await sleep(retryWait(res.headers, retry, this.opts.retry?.maxWaitMs ?? 60_000));
      res = await this.doFetch(`${this.base}${path}`, init);
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    if (!res.ok) {
      let code = `HTTP-${res.status}`;
      let message = text.slice(0, 500);
      try {
        const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
        code = parsed.error?.code ?? code;
        message = parsed.error?.message ?? message;
      } catch {
        // not JSON: keep the text
      }
      throw new EdgeweaveError(res.status, code, message);
    }
    return JSON.parse(text) as T;
  }
}

export const pathId = (id: string) => encodeURIComponent(id);

const utf8 = new TextEncoder();
export const jsonBytes = (v: unknown): number => utf8.encode(JSON.stringify(v)).length;

/**
 * The server's MAX_JSON_ITEMS (src/edge/limits.ts; this package imports nothing of the server): it
 * parses at most this many array items and object keys in one request body, else 400 BEM-014.
 */
export const MAX_JSON_ITEMS = 10_000;
/**
 * The server's MAX_LANGGRAPH_JSON_ITEMS: what it parses in one checkpointer batch (~16,600 writes of one
 * task, or a checkpoint of ~14,000 changed channels), else 400 BEM-014. The store's batches keep MAX_JSON_ITEMS.
 */
export const MAX_LANGGRAPH_JSON_ITEMS = 100_000;

/**
 * A value's JSON bytes, and its array items plus object keys as the server counts them once parsed
 * (one stringify: its replacer sees each key and element that is written, after toJSON; a property
 * whose value JSON leaves out is not counted, an array's hole is written as null and is).
 */
export function jsonSize(v: unknown): { bytes: number; items: number } {
  let calls = 0;
  const text = JSON.stringify(v, function (this: unknown, _key, value: unknown) {
    const omitted = !Array.isArray(this) && (value === undefined || typeof value === "function" || typeof value === "symbol");
    if (!omitted) calls++;
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
export function inRequests<T>(ops: T[], maxOps: number, maxBytes: number, maxItems = MAX_JSON_ITEMS): T[][] {
  const parts: T[][] = [];
  let part: T[] = [];
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
  if (part.length) parts.push(part);
  return parts;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * How long to wait before retry number `retry` (from 0): the server's Retry-After (seconds or an
 * HTTP date), else 1 s doubling per retry; capped at `maxMs`, and a little less at random so clients
 * limited together do not all come back in the same instant.
 */
export function retryWait(headers: Headers, retry: number, maxMs: number, now = Date.now(), random = Math.random): number {
  const value = headers.get("retry-after")?.trim() ?? "";
  const asked = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  const wait = Number.isFinite(asked) && asked >= 0 ? asked : 1000 * 2 ** retry;
  return Math.round(Math.min(wait, maxMs) * (1 - 0.1 * random()));
}
