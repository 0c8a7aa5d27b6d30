import { describe, expect, it } from "vitest";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/**
 * Issue 36: a client's memory_scopes without `session` (Claude Code's `X-Edgeweave-Memory-Scopes:
 * organization:acme`) replaced the session layer, which is the thread's own turns: the model saw
 * "0 earlier messages" and the client's tool-result turn was 400 BEM-096 ("answers no open tool call").
 * A turn on a thread now always loads the thread; the scopes add layers of facts. On every wire format.
 */
const tenant = tenantForRuns();
const ORG = () => `organization:${tenant().tenant}`;
const key = () => tenant().adminKey;

type Send = (thread: string, text: string) => Promise<Response>;
const formats: { name: string; send: Send }[] = [
  {
    name: "chat",
    send: (thread, text) =>
      api("/v1/chat/completions", {
        key: key(),
        body: { model: "auto", thread_id: thread, memory_scopes: [ORG()], messages: [{ role: "user", content: text }] },
      }),
  },
  {
    name: "Responses",
    send: (thread, text) =>
      api("/v1/responses", { key: key(), headers: { "X-Thread-Id": thread }, body: { model: "auto", memory_scopes: [ORG()], input: text } }),
  },
  {
    name: "/v1/messages (body)",
    send: (thread, text) =>
      api("/v1/messages", {
        key: key(),
        body: { model: "auto", max_tokens: 256, thread_id: thread, memory_scopes: [ORG()], messages: [{ role: "user", content: text }] },
      }),
  },
  {
    name: "/v1/messages (X-Edgeweave-Memory-Scopes)",
    send: (thread, text) =>
      api("/v1/messages", {
        key: key(),
        headers: { "X-Thread-Id": thread, "X-Edgeweave-Memory-Scopes": ORG() },
        body: { model: "auto", max_tokens: 256, messages: [{ role: "user", content: text }] },
      }),
  },
  {
    name: "invoke",
    send: (thread, text) =>
      api("/v1/invoke", {
        key: key(),
        body: { agent_name: "assistant", session_id: thread, metadata: { memory_scopes: [ORG()] }, content: [{ type: "text", text }] },
      }),
  },
];

describe("memory_scopes without session keep the thread's own turns", () => {
  it.each(formats)("$name: the second turn sees the first, and the scope's facts load beside it", async ({ send }) => {
    const fact = await api("/v1/memory/facts", { key: key(), body: { scope: ORG(), kind: "style", text: "Use short sentences." } });
    expect(fact.status).toBeLessThan(300);
    const thread = uniqueThread("scopes");
    expect((await send(thread, "Hi, I am Ada.")).status).toBe(200);
    const res = await send(thread, "What is my name?");
    expect(res.status).toBe(200);
    const body = JSON.stringify(await res.json());
    expect(body).toContain("Earlier you said: Hi, I am Ada.");
    expect(body).toContain("Use short sentences.");
  });

  it("chat: the client's tool result answers the call its own earlier turn made", async () => {
    const thread = uniqueThread("scopes-tool");
    const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } } } }];
    const chat = (messages: unknown[], extra: Record<string, unknown> = {}) =>
      api("/v1/chat/completions", { key: key(), body: { model: "auto", thread_id: thread, memory_scopes: [ORG()], tools, messages, ...extra } });
    const first = await chat([{ role: "user", content: "please use lookup" }]);
    expect(first.status).toBe(200);
    const call = (await first.json<{ choices: { message: { tool_calls: { id: string }[] } }[] }>()).choices[0]!.message.tool_calls[0]!;
    const answered = await chat([{ role: "tool", tool_call_id: call.id, content: "42" }]);
    expect(answered.status).toBe(200);
    expect(JSON.stringify(await answered.json())).toContain("The tool answered: 42");
  });
});
