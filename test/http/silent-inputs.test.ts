import { describe, expect, it } from "vitest";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/**
 * Inputs that were accepted and then did nothing (found driving the API from outside): each is a
 * coded 400 that says what to send, and nothing is stored.
 */
const tenant = tenantForRuns({ memberScopes: ["session:cc-*", "session:out-*"] });

const anthropic = { "anthropic-version": "2023-06-01" };
const hi = { role: "user", content: "hi" };

async function errorOf(res: Response): Promise<{ status: number; code: string; message: string }> {
  const j = (await res.json()) as { error: { code?: string; bem_code?: string; message: string } };
  return { status: res.status, code: j.error.code ?? j.error.bem_code ?? "", message: j.error.message };
}

async function threadStatus(thread: string): Promise<number> {
  return (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status;
}

describe("a thread named twice must name one thread", () => {
  it("chat: body thread_id and X-Thread-Id naming different threads is 400 BEM-130, nothing stored", async () => {
    const a = uniqueThread("out");
    const b = uniqueThread("out");
    const res = await api("/v1/chat/completions", {
      key: tenant().memberKey,
      body: { model: "auto", thread_id: a, messages: [hi] },
      headers: { "X-Thread-Id": b },
    });
    const e = await errorOf(res);
    expect(e).toMatchObject({ status: 400, code: "BEM-130" });
    expect(e.message).toContain(a);
    expect(e.message).toContain(b);
    expect(await threadStatus(a)).toBe(404);
    expect(await threadStatus(b)).toBe(404);
  });

  it("chat: the same thread in both is fine", async () => {
    const a = uniqueThread("out");
    const res = await api("/v1/chat/completions", {
      key: tenant().memberKey,
      body: { model: "auto", thread_id: a, messages: [hi] },
      headers: { "X-Thread-Id": a },
    });
    expect(res.status).toBe(200);
    expect(await threadStatus(a)).toBe(200);
  });

  it("messages: body thread_id and X-Thread-Id naming different threads is 400 BEM-130 in Anthropic's shape", async () => {
    const a = uniqueThread("out");
    const b = uniqueThread("out");
    const res = await api("/v1/messages", {
      key: tenant().memberKey,
      body: { model: "auto", max_tokens: 50, thread_id: a, messages: [hi] },
      headers: { ...anthropic, "X-Thread-Id": b },
    });
    const j = (await res.json()) as { type: string; error: { type: string; bem_code: string } };
    expect(res.status).toBe(400);
    expect(j).toMatchObject({ type: "error", error: { type: "invalid_request_error", bem_code: "BEM-130" } });
    expect(await threadStatus(a)).toBe(404);
    expect(await threadStatus(b)).toBe(404);
  });
});

describe("Claude Code session mode without a session", () => {
  it("x-edgeweave-claude-session: thread without x-claude-code-session-id is 400, not a stateless answer", async () => {
    const res = await api("/v1/messages", {
      key: tenant().memberKey,
      body: { model: "auto", max_tokens: 50, messages: [hi] },
      headers: { ...anthropic, "x-edgeweave-claude-session": "thread" },
    });
    const j = (await res.json()) as { error: { type: string; bem_code: string; message: string } };
    expect(res.status).toBe(400);
    expect(j.error).toMatchObject({ type: "invalid_request_error", bem_code: "BEM-011" });
    expect(j.error.message).toContain("x-claude-code-session-id");
  });

  it("with thread_id the session header is not needed", async () => {
    const a = uniqueThread("out");
    const res = await api("/v1/messages", {
      key: tenant().memberKey,
      body: { model: "auto", max_tokens: 50, thread_id: a, messages: [hi] },
      headers: { ...anthropic, "x-edgeweave-claude-session": "thread" },
    });
    expect(res.status).toBe(200);
  });
});

describe("/v1/memory/context takes only its documented fields", () => {
  it("an unknown field (e.g. thread_id, which the route has no use for) is 400 BEM-011 naming it", async () => {
    const res = await api("/v1/memory/context", {
      key: tenant().adminKey,
      body: { scopes: ["organization:acme"], max_tokens: 100, thread_id: "out-x" },
    });
    const e = await errorOf(res);
    expect(e).toMatchObject({ status: 400, code: "BEM-011" });
    expect(e.message).toContain("thread_id");
  });
});
