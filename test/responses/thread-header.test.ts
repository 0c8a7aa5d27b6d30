import { exports } from "cloudflare:workers";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createKey } from "../support/tenants";
import { tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";

/**
 * Issue 24, finding 2: `X-Thread-Id` was silently ignored on /v1/responses, so LangChain's
 * `useResponsesApi: true` (with the README's header) lost its thread and piled up `thr_…`
 * threads. It names the thread as on chat: a new id starts that thread, an existing one
 * continues it (resent history reconciled); with `conversation` or `previous_response_id`
 * naming another thread it is 400 BEM-103 — never ignored.
 */
const tenant = tenantForRuns();
type Made = { id: string; edgeweave: { thread_id: string } };
const code = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

async function threadRoles(thread: string): Promise<string[]> {
  const res = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey });
  expect(res.status).toBe(200);
  return ((await res.json()) as { channels: { messages: { role: string; content: unknown }[] } }).channels.messages.map(
    (m) => `${m.role}:${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`,
  );
}

const threadCount = async () => ((await (await api("/v1/threads?limit=100", { key: tenant().adminKey })).json()) as { threads: unknown[] }).threads.length;

describe("X-Thread-Id on /v1/responses", () => {
  it("names the thread: a new id starts it, the next call continues it; no thr_… thread is made", async () => {
    const fake = fakeOpenAI().reply("Hello Ada.").reply("You are Ada.");
    const thread = uniqueThread("hdr");
    const before = await threadCount();
    const first = await api("/v1/responses", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", input: "I am Ada." },
      headers: { "x-thread-id": thread },
    });
    expect(first.status, await first.clone().text()).toBe(200);
    expect(((await first.json()) as Made).edgeweave.thread_id).toBe(thread);
    const second = await api("/v1/responses", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", input: "Who am I?" },
      headers: { "x-thread-id": thread },
    });
    expect(((await second.json()) as Made).edgeweave.thread_id).toBe(thread);
    expect(wireMessages(fake.calls[1]!.body).map(wireText)).toEqual(["I am Ada.", "Hello Ada.", "Who am I?"]);
    expect(await threadRoles(thread)).toEqual(["user:I am Ada.", "assistant:Hello Ada.", "user:Who am I?", "assistant:You are Ada."]);
    expect(await threadCount()).toBe(before + 1);
  });

  it("LangChain with useResponsesApi and the README's header keeps one thread (its resent history reconciled)", async () => {
    fakeOpenAI().reply("Hello Ada.").reply("You are Ada.");
    const thread = uniqueThread("lc");
    const chat = new ChatOpenAI({
      model: "gpt-4o-mini",
      apiKey: tenant().adminKey,
      useResponsesApi: true,
      maxRetries: 0,
      configuration: {
        baseURL: "http://x/v1",
        defaultHeaders: { "X-Thread-Id": thread },
        fetch: (url: RequestInfo | URL, init?: RequestInit) => exports.default.fetch(new Request(url, init)),
      },
    });
    const hi = new HumanMessage("I am Ada.");
    const a1 = await chat.invoke([hi]);
    expect(a1.content).toBeTruthy();
    await chat.invoke([hi, new AIMessage("Hello Ada."), new HumanMessage("Who am I?")]);
    expect(await threadRoles(thread)).toEqual(["user:I am Ada.", "assistant:Hello Ada.", "user:Who am I?", "assistant:You are Ada."]);
  });

  it("a thread outside the key's grants is 403 BEM-025, nothing stored", async () => {
    const member = await createKey(tenant().tenant, { role: "member", scopes: ["session:mine-*"] });
    const res = await api("/v1/responses", { key: member.key, body: { model: "gpt-4o-mini", input: "hi" }, headers: { "x-thread-id": "theirs-1" } });
    expect(res.status).toBe(403);
    expect(await code(res)).toBe("BEM-025");
    expect((await api("/v1/threads/theirs-1/state", { key: tenant().adminKey })).status).toBe(404);
  });

  it("with conversation or previous_response_id: the same thread is fine, another is 400 BEM-103; a bad id is 400 BEM-030", async () => {
    fakeOpenAI().reply("one").reply("two").reply("three");
    const thread = uniqueThread("hdr");
    const made = (await (
      await api("/v1/responses", { key: tenant().adminKey, body: { model: "gpt-4o-mini", input: "start" }, headers: { "x-thread-id": thread } })
    ).json()) as Made;
    const same = [
      { model: "gpt-4o-mini", input: "again", conversation: thread },
      { model: "gpt-4o-mini", input: "more", previous_response_id: made.id },
    ];
    for (const body of same) expect((await api("/v1/responses", { key: tenant().adminKey, body, headers: { "x-thread-id": thread } })).status).toBe(200);
    const other = uniqueThread("other");
    for (const [body, named] of [
      [{ model: "gpt-4o-mini", input: "x", conversation: other }, thread],
      [{ model: "gpt-4o-mini", input: "x", previous_response_id: made.id }, other],
    ] as const) {
      const res = await api("/v1/responses", { key: tenant().adminKey, body, headers: { "x-thread-id": named } });
      expect(res.status).toBe(400);
      expect(await code(res)).toBe("BEM-103");
    }
    const bad = await api("/v1/responses", { key: tenant().adminKey, body: { model: "gpt-4o-mini", input: "x" }, headers: { "x-thread-id": "has space" } });
    expect(bad.status).toBe(400);
    expect(await code(bad)).toBe("BEM-030");
  });
});
