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

describe("messages: a setting given in the body and in its X-Edgeweave-* header must say one thing", () => {
  const send = (body: Record<string, unknown>, headers: Record<string, string>) =>
    api("/v1/messages", { key: tenant().memberKey, body: { model: "auto", max_tokens: 50, messages: [hi], ...body }, headers: { ...anthropic, ...headers } });

  it("different memory_scopes or agent in both is 400 invalid_request_error naming both, nothing stored: neither is ignored", async () => {
    // The body won and the header was dropped: a member's header scope outside its grants was never refused,
    // and the turn ran with layers (or an agent) other than one of the two the caller sent.
    const cases: [Record<string, unknown>, Record<string, string>, string][] = [
      [{ memory_scopes: ["session:out-mine"] }, { "X-Edgeweave-Memory-Scopes": "organization:elsewhere" }, "memory_scopes"],
      [{ agent: "assistant" }, { "X-Edgeweave-Agent": "support" }, "agent"],
    ];
    for (const [body, headers, field] of cases) {
      const thread = uniqueThread("out");
      const res = await send({ ...body, thread_id: thread }, headers);
      const j = (await res.json()) as { error: { type: string; bem_code: string; message: string } };
      expect(res.status, field).toBe(400);
      expect(j.error, field).toMatchObject({ type: "invalid_request_error", bem_code: "BEM-011" });
      expect(j.error.message, field).toContain(field);
      expect(j.error.message, field).toContain(Object.keys(headers)[0]!);
      expect(await threadStatus(thread), field).toBe(404);
    }
  });

  it("the same value in both is fine (the object and the string form of a scope alike)", async () => {
    const res = await send(
      { memory_scopes: [{ name: "session", id: "out-mine" }], agent: "assistant" },
      { "X-Edgeweave-Memory-Scopes": "session:out-mine", "X-Edgeweave-Agent": "assistant" },
    );
    expect(res.status).toBe(200);
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

describe("parts only an assistant turn carries", () => {
  const thinking = { type: "thinking", thinking: "hm", signature: "sig" };
  const cases: [string, unknown][] = [
    ["thinking", thinking],
    ["redacted_thinking", { type: "redacted_thinking", data: "x" }],
    ["tool_call", { type: "tool_call", id: "call_1" }],
    ["anthropic_block server_tool_use", { type: "anthropic_block", block: { type: "server_tool_use", id: "srv_1", name: "web_search", input: {} } }],
  ];

  it.each(cases)("%s in a user turn: chat and invoke answer 400 BEM-011 naming it, nothing stored", async (name, part) => {
    const thread = uniqueThread("out");
    const chat = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "offline-echo", thread_id: thread, messages: [{ role: "user", content: [{ type: "text", text: "hi" }, part] }] },
    });
    const c = await errorOf(chat);
    expect(c).toMatchObject({ status: 400, code: "BEM-011" });
    expect(c.message).toContain(name.split(" ")[0]!);
    expect(c.message).toContain("assistant turn");
    const invoke = await api("/v1/invoke", {
      key: tenant().adminKey,
      body: { agent_name: "assistant", session_id: thread, content: [{ type: "text", text: "hi" }, part] },
    });
    expect(await errorOf(invoke)).toMatchObject({ status: 400, code: "BEM-011" });
    expect(await threadStatus(thread)).toBe(404);
  });

  it("an assistant's tool_call part naming no call of its own is 400 BEM-011; one naming its call is taken", async () => {
    const thread = uniqueThread("out");
    const assistant = (id: string) => ({
      role: "assistant",
      content: [
        { type: "text", text: "looking" },
        { type: "tool_call", id },
      ],
      tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "{}" } }],
    });
    const turn = (id: string) =>
      api("/v1/chat/completions", {
        key: tenant().adminKey,
        body: {
          model: "offline-echo",
          thread_id: thread,
          messages: [hi, assistant(id), { role: "tool", tool_call_id: "call_1", content: "found" }, { role: "user", content: "and?" }],
        },
      });
    const bad = await errorOf(await turn("call_9"));
    expect(bad).toMatchObject({ status: 400, code: "BEM-011" });
    expect(bad.message).toContain("call_9");
    expect(await threadStatus(thread)).toBe(404);
    expect((await turn("call_1")).status).toBe(200);
  });

  it("a container_upload block (a user's file for code execution) stays allowed in a user turn", async () => {
    const res = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: {
        model: "offline-echo",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "hi" },
              { type: "anthropic_block", block: { type: "container_upload", file_id: "file_1" } },
            ],
          },
        ],
      },
    });
    expect(res.status).toBe(200);
  });
});

describe("image and video links", () => {
  // Passed on as sent, these reached the provider: a file: URL to a custom OpenAI-compatible server
  // that reads local media, a scheme every provider refuses on each later turn of the thread.
  const bad = ["file:///etc/passwd", "ftp://files.test/a.png", "javascript:alert(1)", "data:text/html,<b>hi</b>", "data:image/png,not-base64", "cat.png"];
  const image = (url: string) => ({ type: "image_url", image_url: { url } });

  it.each(bad)("%s: chat, invoke, Responses and conversation items answer 400 BEM-011, nothing stored", async (url) => {
    const thread = uniqueThread("out");
    const chat = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: [{ type: "text", text: "look" }, image(url)] }] },
    });
    const c = await errorOf(chat);
    expect(c).toMatchObject({ status: 400, code: "BEM-011" });
    expect(c.message).toContain("https");
    const video = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: [{ type: "video_url", video_url: { url } }] }] },
    });
    expect(await errorOf(video)).toMatchObject({ status: 400, code: "BEM-011" });
    const invoke = await api("/v1/invoke", { key: tenant().adminKey, body: { agent_name: "assistant", session_id: thread, content: [image(url)] } });
    expect(await errorOf(invoke)).toMatchObject({ status: 400, code: "BEM-011" });
    const input = [{ role: "user", content: [{ type: "input_image", image_url: url }] }];
    const responses = await api("/v1/responses", { key: tenant().adminKey, body: { model: "auto", input }, headers: { "x-thread-id": thread } });
    expect(await errorOf(responses)).toMatchObject({ status: 400, code: "BEM-011" });
    const conversation = await api("/v1/conversations", { key: tenant().adminKey, body: { items: input } });
    expect(await errorOf(conversation)).toMatchObject({ status: 400, code: "BEM-011" });
    expect(await threadStatus(thread)).toBe(404);
  });

  it("http(s) links and base64 data: URLs of the part's kind pass (to routing, which looks for a model that takes them)", async () => {
    for (const url of ["https://img.test/cat.png", "http://img.test/cat.png", "data:image/png;base64,iVBORw0KGgo="]) {
      const res = await api("/v1/route", { key: tenant().adminKey, body: { model: "auto", messages: [{ role: "user", content: [image(url)] }] } });
      expect(res.status, url).toBe(200);
    }
    const video = await api("/v1/route", {
      key: tenant().adminKey,
      body: { model: "auto", messages: [{ role: "user", content: [{ type: "video_url", video_url: { url: "data:video/mp4;base64,AAAA" } }] }] },
    });
    expect(video.status).toBe(422); // validation passed; no shipped model takes video
    expect((await errorOf(video)).code).toBe("BEM-041");
  });
});

describe("memory context: channels rank for query", () => {
  it("channels without query is 400 BEM-011 naming channels: it ranked nothing and was accepted", async () => {
    const res = await api("/v1/memory/context", {
      key: tenant().adminKey,
      body: { scopes: ["organization:acme"], max_tokens: 500, channels: ["dense"] },
    });
    const e = await errorOf(res);
    expect(e).toMatchObject({ status: 400, code: "BEM-011" });
    expect(e.message).toContain("channels");
    expect(e.message).toContain("query");
  });

  it("channels with a blank query is 400 too: a query of spaces ranks nothing either", async () => {
    for (const query of ["", "   "]) {
      const res = await api("/v1/memory/context", {
        key: tenant().adminKey,
        body: { scopes: ["organization:acme"], max_tokens: 500, query, channels: ["full_text"] },
      });
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect((await errorOf(res)).message).toContain("channels");
    }
  });

  it("channels with query loads", async () => {
    const res = await api("/v1/memory/context", {
      key: tenant().adminKey,
      body: { scopes: ["organization:acme"], max_tokens: 500, query: "refunds", channels: ["full_text"] },
    });
    expect(res.status).toBe(200);
  });
});

describe("an unknown query parameter on edgeweave's own GET routes is 400 BEM-011 naming it", () => {
  // Ignored, a misspelt filter (`?form=` for `from`) answered a different list than the one asked for.
  it.each([
    "/v1/usage?form=2026-01-01",
    "/v1/memory/facts?scope=organization:acme&kinds=note",
    "/v1/threads?serach=a",
    "/v1/threads/out-none/state?checkpoint=1",
    "/v1/threads/out-none/history?limt=2",
    "/v1/webhooks?page=2",
    "/v1/tasks/dead-letters?page=2",
    "/v1/tasks/task-none?wait=5",
    "/v1/memory/facts/01M94Q1E0P000000T5PM/history?limit=1",
  ])("%s", async (path) => {
    const e = await errorOf(await api(path, { key: tenant().adminKey }));
    expect(e).toMatchObject({ status: 400, code: "BEM-011" });
    const name = new URL(path, "http://x").searchParams;
    const known = new Set(["scope"]);
    for (const k of name.keys()) if (!known.has(k)) expect(e.message).toContain(k);
  });

  it("the budget admin routes too: a ?kind= filter answered every budget, as if it had filtered", async () => {
    const base = `/v1/admin/tenants/${tenant().tenant}/budgets`;
    for (const path of [`${base}?kind=metadata`, `${base}/bud_000000000000000000000000?x=1`]) {
      const res = await api(path, { key: tenant().adminKey });
      expect(res.status, path).toBe(400);
      const e = await errorOf(res);
      expect(e.code).toBe("BEM-011");
      expect(e.message).toContain(path.includes("kind=") ? '"kind"' : '"x"');
    }
    expect((await api(base, { key: tenant().adminKey })).status).toBe(200);
  });

  it("the message says the parameter is in the query, not the body", async () => {
    // It read `(body): Unrecognized key: "form"` for a GET that has no body.
    const e = await errorOf(await api("/v1/usage?form=2026-01-01", { key: tenant().adminKey }));
    expect(e.message).toContain("(query)");
    expect(e.message).not.toContain("(body)");
  });

  it("the known ones still answer", async () => {
    for (const path of ["/v1/usage?from=2026-01-01", "/v1/memory/facts?scope=organization:acme&kind=note", "/v1/threads?query=a", "/v1/webhooks?limit=2"])
      expect((await api(path, { key: tenant().adminKey })).status, path).toBe(200);
  });
});
