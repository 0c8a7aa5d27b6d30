import { exports } from "cloudflare:workers";
import { hc } from "hono/client";
import { describe, expect, it } from "vitest";
import type { App } from "../../src/index";
import { createTenant } from "../support/tenants";

/**
 * hono/client over the exported `App` type, its requests sent straight to the worker
 * under test. `tsc --noEmit` checks this file: each `@ts-expect-error` below fails the
 * type check if the client's types ever stop coming from the routes.
 */
const clientFor = (key: string) =>
  hc<App>("http://x", {
    headers: { authorization: `Bearer ${key}` },
    fetch: (input: RequestInfo | URL, init?: RequestInit) => exports.default.fetch(new Request(input, init)),
  });

const uniqueThread = () => `typed-${crypto.randomUUID().slice(0, 12)}`;

// Error bodies are thrown AppErrors, not handler returns, so the client types only the
// success statuses; an error response is read as the documented public shape.
const errorCode = async (res: { json(): Promise<unknown> }) => ((await res.json()) as { error: { code: string } }).error.code;

describe("typed client (hono/client over App)", () => {
  it("lists models with the response typed from the route's schema", async () => {
    const t = await createTenant();
    const res = await clientFor(t.adminKey).v1.models.$get();
    if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
    const body = await res.json();
    expect(body.object).toBe("list");
    // `data` is Model[]: its fields need no casts, and a field it lacks does not compile.
    const offline = body.data.find((m) => m.offline);
    expect([offline?.id, offline?.provider, offline?.available]).toEqual(["offline-echo", "custom", true]);
    expect(body.data.every((m) => m.max_tokens > 0 && m.object === "model")).toBe(true);
    // @ts-expect-error Model has no `price` field
    expect(body.data[0]?.price).toBeUndefined();
  });

  it("fills path parameters from a typed object", async () => {
    const t = await createTenant();
    const models = clientFor(t.adminKey).v1.models;
    const res = await models[":name"].$get({ param: { name: "offline-echo" } });
    if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
    const model = await res.json();
    expect([model.id, model.offline, model.max_tokens]).toEqual(["offline-echo", true, 32768]);
    expect(models[":name"].$url({ param: { name: "a b" } }).pathname).toBe("/v1/models/a%20b");

    const missing = await models[":name"].$get({ param: { name: "no-such-model" } });
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe("BEM-049");
  });

  it("remembers a fact and reads it back; a body the schema rejects does not compile", async () => {
    const t = await createTenant();
    const client = clientFor(t.adminKey);
    const created = await client.v1.memory.facts.$post({ json: { scope: "organization:acme", kind: "style", text: "Use short sentences." } });
    if (created.status !== 201) throw new Error(`${created.status} ${await created.text()}`);
    const fact = await created.json();
    expect([fact.scope, fact.kind]).toEqual(["organization:acme", "style"]);

    const page = await client.v1.memory.facts.$get({ query: { scope: "organization:acme" } });
    if (page.status !== 200) throw new Error(`${page.status} ${await page.text()}`);
    const { facts, next_cursor } = await page.json();
    expect(facts.map((f) => [f.id, f.text])).toEqual([[fact.id, "Use short sentences."]]);
    expect(next_cursor).toBeNull();

    // @ts-expect-error `text` is required by RememberFact
    const bad = await client.v1.memory.facts.$post({ json: { scope: "organization:acme", kind: "style" } });
    expect(bad.status).toBe(400);
    expect(await errorCode(bad)).toBe("BEM-011");
  });

  it("chats on a thread (offline model via auto) and reads the thread's state, both typed", async () => {
    const t = await createTenant();
    const client = clientFor(t.adminKey);
    const thread = uniqueThread();
    const chat = await client.v1.chat.completions.$post({
      header: {},
      json: { model: "auto", thread_id: thread, messages: [{ role: "user", content: "Hello typed world" }] },
    });
    if (chat.status !== 200) throw new Error(`${chat.status} ${await chat.text()}`);
    // The 200 is JSON, or SSE text with stream: true; this request asked for JSON.
    const completion = await chat.json();
    if (typeof completion !== "object" || !("choices" in completion)) throw new Error("expected a chat.completion object");
    expect(completion.model).toBe("offline-echo");
    const reply = completion.choices[0]?.message.content ?? "";
    expect(reply.split("\n")[0]).toBe("Echo: Hello typed world");
    expect(completion.edgeweave.thread_id).toBe(thread);
    expect(completion.edgeweave.routing.model).toBe("offline-echo");
    // @ts-expect-error the completion's extension object has no `secrets` field
    expect(completion.edgeweave.secrets).toBeUndefined();
    expect(completion.edgeweave.memory?.facts).toEqual([]);

    const res = await client.v1.threads[":id"].state.$get({ param: { id: thread }, query: {} });
    if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
    const state = await res.json();
    expect(state.checkpoint_id).toBe(completion.edgeweave.checkpoint_id);
    expect(state.channels.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "Hello typed world"],
      ["assistant", reply],
    ]);
    // @ts-expect-error ThreadState has no `messages` at the top level (they live in channels)
    expect(state.messages).toBeUndefined();

    const unknown = await client.v1.threads[":id"].state.$get({ param: { id: uniqueThread() }, query: {} });
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe("BEM-036");
  });
});
