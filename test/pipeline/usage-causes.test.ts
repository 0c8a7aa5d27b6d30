import { beforeAll, describe, expect, it } from "vitest";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 11, finding 10: summaries (the summarization middleware and
 * /v1/tasks/summarize) called providers but never reached /v1/usage. Every
 * provider call is recorded, with what caused it.
 */
type Row = { day: string; model: string; cause: string; requests: number; prompt_tokens: number; completion_tokens: number; cost: number };
type Usage = { data: Row[]; total: { requests: number } };

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});

const usage = async (): Promise<Usage> => (await (await api("/v1/usage", { key: t.adminKey })).json()) as Usage;
const requestsBy = (u: Usage, cause: string) => u.data.filter((r) => r.cause === cause).reduce((n, r) => n + r.requests, 0);

async function seed(thread: string, n: number) {
  const messages = Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `message ${i} about the launch plan` }));
  expect((await api(`/v1/threads/${thread}/state`, { key: t.adminKey, body: { ops: [{ op: "append", messages }] } })).status).toBe(200);
}

describe("every provider call is in /v1/usage, with its cause", () => {
  it("a turn whose summarization middleware ran: two calls, 'turn' and 'summarization'", async () => {
    const before = await usage();
    const thread = `sum-${crypto.randomUUID().slice(0, 8)}`;
    await seed(thread, 10);
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "auto", agent: "long-chat", thread_id: thread, messages: [{ role: "user", content: "and now?" }] },
    });
    expect(res.status).toBe(200);
    const state = (await (await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).json()) as {
      channels: { messages: { metadata?: Record<string, unknown> }[] };
    };
    expect(state.channels.messages.some((m) => m.metadata?.summary_of)).toBe(true); // the middleware did call a model
    const after = await waitFor("usage recorded", async () => {
      const u = await usage();
      return u.total.requests >= before.total.requests + 2 ? u : undefined;
    });
    expect(after.total.requests - before.total.requests).toBe(2);
    expect(requestsBy(after, "turn") - requestsBy(before, "turn")).toBe(1);
    expect(requestsBy(after, "summarization") - requestsBy(before, "summarization")).toBe(1);
  });

  it("POST /v1/tasks/summarize: one call, 'summarize_task'", async () => {
    const before = await usage();
    const thread = `task-${crypto.randomUUID().slice(0, 8)}`;
    await seed(thread, 8);
    const res = await api("/v1/tasks/summarize", { key: t.adminKey, body: { thread_id: thread, keep_messages: 2 } });
    expect(res.status).toBe(202);
    const after = await waitFor("usage recorded", async () => {
      const u = await usage();
      return u.total.requests > before.total.requests ? u : undefined;
    });
    expect(after.total.requests - before.total.requests).toBe(1);
    expect(requestsBy(after, "summarize_task") - requestsBy(before, "summarize_task")).toBe(1);
  });
});

describe("GET /v1/usage checks its days", () => {
  it("a day that is no calendar day, or a range that ends before it starts, is a coded 400, not an empty answer", async () => {
    for (const q of ["from=2026-13-01", "to=2026-02-30", "from=2026-00-10", "from=2026-12-02&to=2026-12-01"]) {
      const res = await api(`/v1/usage?${q}`, { key: t.adminKey });
      expect(res.status, q).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code, q).toBe("BEM-011");
    }
    expect((await api("/v1/usage?from=2024-02-29&to=2024-03-01", { key: t.adminKey })).status).toBe(200);
  });
});
