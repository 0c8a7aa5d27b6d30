/** What every edgeweave LangGraph client takes. */
export type EdgeweaveClientOptions = {
  /** The worker's origin, e.g. "http://localhost:8787" (the /v1/langgraph prefix is added). */
  baseUrl: string;
  /** A tenant API key (admin, or a member whose grants cover the threads / namespaces used). */
  apiKey: string;
  /** Defaults to globalThis.fetch (pass one to count calls, add retries or call a service binding). */
  fetch?: typeof fetch;
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
    const res = await this.doFetch(`${this.base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
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
