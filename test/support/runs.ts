import { exports } from "cloudflare:workers";
import OpenAI from "openai";
import { afterEach, beforeAll, expect } from "vitest";
import { api, createTenant, type TestTenant } from "./tenants";
import { clearUpstream, unmockedRequests } from "./upstream";

/** The worker under test, as the fetch a client calls. */
export const workerSend = (req: Request): Promise<Response> => exports.default.fetch(req);

/** The official OpenAI client pointed at the worker under test; `send` stands between them when given (to watch or drop requests). */
export function openaiClient(key: string, maxRetries = 0, send: (req: Request) => Promise<Response> = workerSend): OpenAI {
  return new OpenAI({
    apiKey: key,
    baseURL: "http://x/v1",
    maxRetries,
    fetch: (url: RequestInfo | URL, init?: RequestInit) => send(new Request(url, init)),
  });
}

/** How many messages thread `thread` holds at its head (0 when it does not exist). */
export async function messageCount(key: string, thread: string): Promise<number> {
  const res = await api(`/v1/threads/${thread}/state`, { key });
  if (res.status === 404) return 0;
  return ((await res.json()) as { channels: { messages: unknown[] } }).channels.messages.length;
}

export const uniqueThread = (prefix = "th") => `${prefix}-${crypto.randomUUID().slice(0, 12)}`;

/** State + history of a thread, for before/after comparisons (404 when it does not exist yet). */
export async function snapshot(key: string, thread: string): Promise<{ state: unknown; history: unknown; status: number }> {
  const s = await api(`/v1/threads/${thread}/state`, { key });
  const h = await api(`/v1/threads/${thread}/history?limit=100`, { key });
  return { status: s.status, state: await s.json(), history: await h.json() };
}

/** Reads an SSE body into its `data:` payloads (and event names). */
export async function readSse(res: Response): Promise<{ event: string | undefined; data: string }[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((block) => {
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      return { event, data: data.join("\n") };
    });
}

type WireMessage = { role: string; content: unknown };
export const wireMessages = (body: unknown): WireMessage[] => (body as { messages: WireMessage[] }).messages;
export const wireText = (m: WireMessage): string => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));

/**
 * Per-file setup for run tests: a fresh tenant before the tests, and after each one
 * a check that nothing reached an unmocked host, then the fakes cleared.
 * Returns a getter, since the tenant exists only once beforeAll has run.
 */
export function tenantForRuns(opts?: Parameters<typeof createTenant>[0]): () => TestTenant {
  let t: TestTenant | undefined;
  beforeAll(async () => {
    t = await createTenant(opts);
  });
  afterEach(() => {
    expect(unmockedRequests()).toEqual([]);
    clearUpstream();
  });
  return () => {
    if (!t) throw new Error("tenantForRuns: the tenant is created in beforeAll");
    return t;
  };
}
