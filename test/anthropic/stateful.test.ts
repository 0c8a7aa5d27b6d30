import { describe, expect, it } from "vitest";
import { sessionThreadId } from "../../src/anthropic/session";
import { openaiClient, tenantForRuns, uniqueThread } from "../support/runs";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOpenAI } from "../support/fake-openai";
import { settleBookkeeping } from "../support/bookkeeping";
import { api } from "../support/tenants";

/**
 * Issue 22 item 7: /v1/messages is stateful like chat (thread_id / X-Thread-Id, reconciled
 * resends), with an opt-in mode where Claude Code's session header names the thread, a prefix
 * grant for member keys, and memory placed after the client's conversation (prompt caching).
 */
const tenant = tenantForRuns({ memberScopes: ["session:cc-*"] });

type Stored = { role: string; content: unknown; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string };
async function stored(thread: string, key = tenant().adminKey): Promise<Stored[]> {
  const res = await api(`/v1/threads/${thread}/state`, { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { channels: { messages: Stored[] } }).channels.messages;
}

const messages = (body: unknown, key = tenant().adminKey, headers: Record<string, string> = {}) =>
  api("/v1/messages", { key, body, headers: { "anthropic-version": "2023-06-01", ...headers } });

/** What a comparison of two stored turns looks at: roles, text, tool names and arguments (ids may differ). */
const shape = (ms: Stored[]) =>
  ms.map((m) => ({
    role: m.role,
    text: typeof m.content === "string" ? m.content : Array.isArray(m.content) ? (m.content as { text?: string }[]).map((p) => p.text ?? "").join("") : "",
    tools: (m.tool_calls ?? []).map((t) => [t.function.name, JSON.parse(t.function.arguments)]),
  }));

describe("stateful /v1/messages", () => {
  it("a chat request and the same request in Anthropic form produce the same stored turn", async () => {
    const tools = { name: "get_weather", description: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
    fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_c1", name: "get_weather", arguments: { city: "Oslo" } }] })
      .reply("Rain in Oslo.")
      .reply({ tool_calls: [{ id: "call_a1", name: "get_weather", arguments: { city: "Oslo" } }] })
      .reply("Rain in Oslo.");
    const chatThread = uniqueThread("chat");
    const c = openaiClient(tenant().adminKey);
    const ask = { role: "user" as const, content: "Weather in Oslo?" };
    const first = await c.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [ask],
      tools: [{ type: "function", function: tools }],
      thread_id: chatThread,
    } as never);
    const call = (first as { choices: { message: { tool_calls: { id: string }[] } }[] }).choices[0]!.message.tool_calls[0]!;
    await c.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "tool", tool_call_id: call.id, content: "rain" }],
      tools: [{ type: "function", function: tools }],
      thread_id: chatThread,
    } as never);

    const msgThread = uniqueThread("msg");
    const anthropicTools = [{ name: tools.name, description: tools.description, input_schema: tools.parameters }];
    const r1 = await messages({ model: "gpt-4o-mini", max_tokens: 256, tools: anthropicTools, thread_id: msgThread, messages: [ask] });
    const m1 = (await r1.json()) as { content: { type: string; id?: string }[] };
    const use = m1.content.find((b) => b.type === "tool_use")!;
    const r2 = await messages({
      model: "gpt-4o-mini",
      max_tokens: 256,
      tools: anthropicTools,
      thread_id: msgThread,
      messages: [ask, { role: "assistant", content: m1.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "rain" }] }],
    });
    expect(r2.status).toBe(200);
    const fromChat = await stored(chatThread);
    const fromMessages = await stored(msgThread);
    expect(shape(fromMessages)).toEqual(shape(fromChat));
    expect(shape(fromChat).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("a resent conversation (as Anthropic clients send it) is stored once; X-Thread-Id works as thread_id does", async () => {
    const up = fakeAnthropic().reply("One.").reply("Two.");
    const thread = uniqueThread("resend");
    const turn1 = [{ role: "user", content: "Count with me" }];
    await messages({ model: "claude-sonnet-4", max_tokens: 64, messages: turn1 }, undefined, { "x-thread-id": thread });
    const turn2 = [...turn1, { role: "assistant", content: "One." }, { role: "user", content: "Go on" }];
    const res = await messages({ model: "claude-sonnet-4", max_tokens: 64, messages: turn2 }, undefined, { "x-thread-id": thread });
    const body = (await res.json()) as { edgeweave: { reconciled: { matched: number; appended: number } } };
    expect(body.edgeweave.reconciled).toMatchObject({ matched: 2, appended: 1 });
    expect(shape(await stored(thread)).map((m) => `${m.role}:${m.text}`)).toEqual(["user:Count with me", "assistant:One.", "user:Go on", "assistant:Two."]);
    // The upstream saw the conversation once, in order.
    expect(up.last.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it("session-header mode: Claude Code's session names the thread, each turn is stored once, a member key needs session:cc-*", async () => {
    fakeAnthropic().reply("Hi!").reply("Still here.").reply("Summary noted.");
    const session = crypto.randomUUID();
    const headers = { "x-claude-code-session-id": session, "x-edgeweave-claude-session": "thread" };
    const first = { role: "user", content: "hello" };
    const t1 = await messages({ model: "claude-sonnet-4", max_tokens: 64, messages: [first] }, tenant().memberKey, headers);
    expect(t1.status).toBe(200);
    const thread = ((await t1.json()) as { edgeweave: { thread_id: string } }).edgeweave.thread_id;
    expect(thread).toBe(sessionThreadId(session, first as never));
    expect(thread.startsWith(`cc-${session}-`)).toBe(true);
    const t2 = await messages(
      { model: "claude-sonnet-4", max_tokens: 64, messages: [first, { role: "assistant", content: "Hi!" }, { role: "user", content: "again" }] },
      tenant().memberKey,
      headers,
    );
    expect(t2.status).toBe(200);
    expect(shape(await stored(thread, tenant().memberKey)).map((m) => m.text)).toEqual(["hello", "Hi!", "again", "Still here."]);
    // /compact: the conversation restarts from a summary; it continues in a thread of its own, no rewrite needed.
    const compacted = await messages(
      { model: "claude-sonnet-4", max_tokens: 64, messages: [{ role: "user", content: "Summary: we said hello twice." }] },
      tenant().memberKey,
      headers,
    );
    expect(compacted.status).toBe(200);
    const next = ((await compacted.json()) as { edgeweave: { thread_id: string } }).edgeweave.thread_id;
    expect(next).not.toBe(thread);
    expect(next.startsWith(`cc-${session}-`)).toBe(true);
    expect(shape(await stored(thread, tenant().memberKey))).toHaveLength(4);
    // Off by default: the header alone names no thread.
    fakeAnthropic().reply("stateless");
    const off = await messages({ model: "claude-sonnet-4", max_tokens: 64, messages: [first] }, tenant().memberKey, { "x-claude-code-session-id": session });
    expect(((await off.json()) as { edgeweave: { thread_id: string | null } }).edgeweave.thread_id).toBeNull();
  });

  it("session-header mode: the breakpoint Claude Code moves to the newest message each call does not move the conversation to another thread", async () => {
    fakeAnthropic().reply("Hi!").reply("Still here.").reply("Third.");
    const session = crypto.randomUUID();
    const headers = { "x-claude-code-session-id": session, "x-edgeweave-claude-session": "thread" };
    const text = (t: string, cached = false) => ({ type: "text", text: t, ...(cached ? { cache_control: { type: "ephemeral" } } : {}) });
    const ask = (t: string, cached: boolean) => ({ role: "user", content: [text("<system-reminder>context</system-reminder>"), text(t, cached)] });
    // Each call carries the breakpoint on its newest message only: the first message has it on the first call alone.
    const calls = [
      [ask("hello", true)],
      [ask("hello", false), { role: "assistant", content: [text("Hi!")] }, ask("again", true)],
      [
        ask("hello", false),
        { role: "assistant", content: [text("Hi!")] },
        ask("again", false),
        { role: "assistant", content: [text("Still here.")] },
        ask("more", true),
      ],
    ];
    const threads: string[] = [];
    for (const messagesSent of calls) {
      const res = await messages({ model: "claude-sonnet-4", max_tokens: 64, messages: messagesSent }, tenant().memberKey, headers);
      expect(res.status).toBe(200);
      threads.push(((await res.json()) as { edgeweave: { thread_id: string } }).edgeweave.thread_id);
    }
    expect(new Set(threads).size).toBe(1);
    expect(shape(await stored(threads[0]!, tenant().memberKey)).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
  });

  it("a member key without a session:cc-* grant is refused the session thread (403 permission_error BEM-025), nothing called", async () => {
    const t = await (await import("../support/tenants")).createTenant();
    const up = fakeAnthropic();
    const res = await messages({ model: "claude-sonnet-4", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }, t.memberKey, {
      "x-claude-code-session-id": crypto.randomUUID(),
      "x-edgeweave-claude-session": "thread",
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "permission_error", bem_code: "BEM-025" } });
    expect(up.calls).toHaveLength(0);
  });

  it("Idempotency-Key and usage work as on chat: a repeat is replayed without a second provider call, and the turn is billed", async () => {
    const up = fakeAnthropic().reply({ text: "once", usage: { prompt_tokens: 7, completion_tokens: 3 } });
    const key = `idem-${crypto.randomUUID()}`;
    const thread = uniqueThread("idem");
    const body = { model: "claude-sonnet-4", max_tokens: 64, thread_id: thread, messages: [{ role: "user", content: "only once" }] };
    const a = await messages(body, undefined, { "idempotency-key": key });
    const b = await messages(body, undefined, { "idempotency-key": key });
    expect(a.status).toBe(200);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(await b.json()).toEqual(await a.json());
    expect(up.calls).toHaveLength(1);
    await settleBookkeeping(tenant().tenant, [thread]); // sent by the thread's object as the answer leaves
    const day = new Date().toISOString().slice(0, 10);
    const usage = (await (await api(`/v1/usage?from=${day}&to=${day}`, { key: tenant().adminKey })).json()) as {
      rows?: { model: string }[];
      usage?: { model: string }[];
    };
    expect(JSON.stringify(usage)).toContain("claude-sonnet-4");
  });

  it("memory goes after the client's conversation: the system prompt and earlier turns reach Anthropic byte for byte", async () => {
    const fact = await api("/v1/memory/facts", { key: tenant().adminKey, body: { scope: "organization:acme", kind: "style", text: "Answer in French." } });
    expect(fact.status).toBe(201);
    const up = fakeAnthropic().reply("D'accord.");
    const system = [{ type: "text", text: "You are a coding assistant.", cache_control: { type: "ephemeral" } }];
    const history = [
      { role: "user", content: [{ type: "text", text: "Earlier question" }] },
      { role: "assistant", content: [{ type: "text", text: "Earlier answer" }] },
      { role: "user", content: [{ type: "text", text: "New question", cache_control: { type: "ephemeral" } }] },
    ];
    // memory_scopes as a header (X-Edgeweave-Memory-Scopes), as clients that cannot add body fields send it.
    await messages({ model: "claude-sonnet-4", max_tokens: 64, system, messages: history }, undefined, { "x-edgeweave-memory-scopes": "organization:acme" });
    const sent = up.last.body;
    expect(sent.system).toEqual(system);
    expect(sent.messages.slice(0, 2)).toEqual(history.slice(0, 2));
    // The client's last block keeps its breakpoint; the facts follow it, uncached.
    const last = sent.messages[2].content;
    expect(last[0]).toEqual(history[2]!.content[0]);
    expect(last.at(-1)).toEqual({ type: "text", text: "[style organization:acme] Answer in French." });
  });
});
