import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { failCollector, heldCount, type ReceivedSpan, receivedExports, restoreCollector, tracesOf, waitForTraces } from "../support/fake-otlp";
import { loggedLines } from "../support/logs";
import { readSse, tenantForRuns, uniqueThread } from "../support/runs";
import { api, createTenant, type TestTenant } from "../support/tenants";

/**
 * A turn's spans as the OTLP collector receives them (docs/operations/tracing.md): the agent
 * invocation, each model call, each tool execution and the memory operations, in OpenTelemetry's
 * GenAI conventions, with no prompt or answer unless the tenant opted in.
 */

const tenant = tenantForRuns();

const chat = (key: string, body: Record<string, unknown>) => api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", ...body } });
const say = (content: string) => [{ role: "user", content }];

const named = (trace: ReceivedSpan[], name: string): ReceivedSpan[] => trace.filter((s) => s.name === name);
const one = (trace: ReceivedSpan[], name: string): ReceivedSpan => {
  const found = named(trace, name);
  if (found.length !== 1) throw new Error(`expected one span '${name}', got ${found.length}: ${trace.map((s) => s.name).join(", ")}`);
  return found[0]!;
};
const CONTENT_KEYS = [
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.tool.call.arguments",
  "gen_ai.tool.call.result",
  "gen_ai.memory.query.text",
  "gen_ai.memory.records",
];
const contentKeys = (trace: ReceivedSpan[]) => trace.flatMap((s) => Object.keys(s.attributes).filter((k) => CONTENT_KEYS.includes(k)));

/** Every span's parent is in the trace and encloses it in time; exactly one root. */
function expectWellFormed(trace: ReceivedSpan[]): ReceivedSpan {
  const roots = trace.filter((s) => s.parentSpanId === undefined);
  expect(roots).toHaveLength(1);
  for (const s of trace) {
    expect(s.endNs).toBeGreaterThanOrEqual(s.startNs);
    expect(s.service).toBe("edgeweave");
    if (s.parentSpanId === undefined) continue;
    const parent = trace.find((p) => p.spanId === s.parentSpanId);
    expect(parent, `${s.name}'s parent`).toBeDefined();
    expect(s.startNs).toBeGreaterThanOrEqual(parent!.startNs);
    expect(s.endNs).toBeLessThanOrEqual(parent!.endNs);
  }
  return roots[0]!;
}

/** The trace's root: agent `agent`'s invocation on `thread`, ended without error, with the conventions' attributes. */
function expectAgentRoot(trace: ReceivedSpan[], agent: string, thread: string): ReceivedSpan {
  const root = expectWellFormed(trace);
  expect(root).toMatchObject({ name: `invoke_agent ${agent}`, kind: "internal", error: undefined });
  expect(root.attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": agent,
    "gen_ai.conversation.id": thread,
    "gen_ai.provider.name": "openai",
  });
  return root;
}

describe("a turn's spans reach the OTLP collector", () => {
  it("a chat turn: invoke_agent → search_memory and chat, with the conventions' attributes and no content", async () => {
    const t = tenant();
    const thread = uniqueThread();
    fakeOpenAI().reply({ text: "Hello there.", usage: { prompt_tokens: 17, completion_tokens: 4 }, model: "gpt-4o-mini-2024-07-18" });
    const res = await chat(t.adminKey, { thread_id: thread, messages: say("Say hello to my cat Pixel") });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { edgeweave: { checkpoint_id: string } };

    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectAgentRoot(trace!, "default", thread);
    expect(root.attributes).toMatchObject({
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.response.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": 17,
      "gen_ai.usage.output_tokens": 4,
      "gen_ai.response.finish_reasons": ["stop"],
      "edgeweave.tenant.id": t.tenant,
      "edgeweave.checkpoint.id": body.edgeweave.checkpoint_id,
    });

    const model = one(trace!, "chat gpt-4o-mini");
    expect(model.parentSpanId).toBe(root.spanId);
    expect(model.kind).toBe("client");
    expect(model.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
      "gen_ai.usage.input_tokens": 17,
      "gen_ai.usage.output_tokens": 4,
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.conversation.id": thread,
      "server.address": "api.openai.com",
      "edgeweave.route.model": "gpt-4o-mini",
      "edgeweave.failover.attempts": ["gpt-4o-mini ok"],
    });
    expect(model.attributes["gen_ai.request.stream"]).toBeUndefined();

    const memory = one(trace!, "search_memory");
    expect(memory.parentSpanId).toBe(root.spanId);
    expect(memory.attributes).toMatchObject({ "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "edgeweave.context" });
    expect(memory.endNs).toBeLessThanOrEqual(model.startNs);

    // Off by default: no prompt, answer or query, and the words of neither anywhere in the export.
    expect(contentKeys(trace!)).toEqual([]);
    expect(JSON.stringify(trace!.map((s) => s.attributes))).not.toMatch(/Pixel|Hello there/);
    // The collector got the configured headers (the secret's Basic auth) and OTLP's JSON.
    const mine = receivedExports().find((e) => e.spans.some((s) => s.traceId === root.traceId))!;
    expect(mine).toMatchObject({ authorization: "Basic cGstbGYtdGVzdDpzay1sZi10ZXN0", contentType: "application/json" });
    expect(mine.malformed).toBeUndefined();
  });

  it("a streamed turn: the chat span says so, with its time to the first chunk", async () => {
    const t = await createTenant();
    fakeOpenAI().reply({ text: "streamed answer", chunks: ["streamed ", "answer"] });
    const res = await chat(t.adminKey, { thread_id: uniqueThread(), stream: true, messages: say("stream it") });
    expect(res.status).toBe(200);
    expect((await readSse(res)).at(-1)?.data).toBe("[DONE]");
    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectWellFormed(trace!);
    const model = one(trace!, "chat gpt-4o-mini");
    expect(model.parentSpanId).toBe(root.spanId);
    expect(model.attributes["gen_ai.request.stream"]).toBe(true);
    expect(model.attributes["gen_ai.response.time_to_first_chunk"]).toBeTypeOf("number");
    expect(model.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
  });

  it("a turn without a thread (run in the Worker) is traced the same way, without a conversation id", async () => {
    const t = await createTenant();
    fakeOpenAI().reply("stateless");
    expect((await chat(t.adminKey, { messages: say("no thread") })).status).toBe(200);
    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectWellFormed(trace!);
    expect(root.attributes["gen_ai.conversation.id"]).toBeUndefined();
    expect(one(trace!, "chat gpt-4o-mini").parentSpanId).toBe(root.spanId);
  });

  it("failover: one chat span names the router's choice, every attempt and the model that answered", async () => {
    const t = await createTenant();
    fakeOpenAI().status(500).status(500).reply("from the second model");
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "auto", capabilities: ["json"], thread_id: uniqueThread(), messages: say("hi") },
    });
    expect(res.status).toBe(200);
    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectWellFormed(trace!);
    const model = one(trace!, "chat gpt-4o");
    expect(model.parentSpanId).toBe(root.spanId);
    expect(model.error).toBeUndefined();
    expect(model.attributes).toMatchObject({ "gen_ai.request.model": "gpt-4o", "edgeweave.route.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o" });
    expect(model.attributes["edgeweave.route.candidates"]).toEqual(expect.arrayContaining(["gpt-4o-mini", "gpt-4o"]));
    const attempts = model.attributes["edgeweave.failover.attempts"] as string[];
    expect(attempts).toEqual(["gpt-4o-mini retry 500 BEM-071", "gpt-4o-mini failover 500 BEM-071", "gpt-4o ok"]);
    expect(root.attributes).toMatchObject({ "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o" });
  });

  it("every candidate failing: the chat and agent spans end in error with the turn's code", async () => {
    const t = await createTenant();
    fakeOpenAI().otherwise({ text: "never" }).status(503).status(503).status(503).status(503).status(503).status(503);
    const res = await chat(t.adminKey, { model: "auto", capabilities: ["json", "tools"], thread_id: uniqueThread(), messages: say("hi") });
    const code = ((await res.json()) as { error: { code: string } }).error.code;
    expect(res.status).toBe(502);
    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectWellFormed(trace!);
    const model = trace!.find((s) => s.name.startsWith("chat "))!;
    expect(model.attributes["error.type"]).toBe(code);
    expect(model.error).toBeTypeOf("string");
    expect((model.attributes["edgeweave.failover.attempts"] as string[]).every((a) => a.includes(" 503"))).toBe(true);
    expect(root.attributes["error.type"]).toBe(code);
  });
});

describe("tool loop and memory operations", () => {
  const memoryTurn = (key: string, thread: string, content: string) => chat(key, { agent: "memory-assistant", thread_id: thread, messages: say(content) });
  const call = (name: string, args: Record<string, unknown>, id = `call_${name}`) => ({ tool_calls: [{ id, name, arguments: args }] });

  it("remember, recall and forget: execute_tool spans under the agent, each memory operation under its tool", async () => {
    const t = await createTenant();
    const thread = uniqueThread();
    fakeOpenAI()
      .reply(call("remember", { kind: "profile", key: "home-city", text: "The user lives in Lisbon." }))
      .reply(call("recall", { query: "where does the user live?" }))
      .reply(call("forget", { key: "home-city" }))
      .reply("Done.");
    expect((await memoryTurn(t.adminKey, thread, "I live in Lisbon.")).status).toBe(200);
    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectWellFormed(trace!);
    expect(root.name).toBe("invoke_agent memory-assistant");
    // Four model calls, three tool calls, all children of the agent, in order.
    const chats = trace!.filter((s) => s.name.startsWith("chat "));
    expect(chats).toHaveLength(4);
    for (const s of chats) expect(s.parentSpanId).toBe(root.spanId);
    expect(chats.map((s) => s.attributes["gen_ai.response.finish_reasons"])).toEqual([["tool_calls"], ["tool_calls"], ["tool_calls"], ["stop"]]);

    const tools = ["remember", "recall", "forget"].map((name) => one(trace!, `execute_tool ${name}`));
    for (const [i, s] of tools.entries()) {
      expect(s.parentSpanId).toBe(root.spanId);
      expect(s.error).toBeUndefined();
      // Each tool runs after the model call that asked for it and before the next one.
      expect(s.startNs).toBeGreaterThanOrEqual(chats[i]!.endNs);
      expect(s.endNs).toBeLessThanOrEqual(chats[i + 1]!.startNs);
    }
    expect(tools[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "remember",
      "gen_ai.tool.call.id": "call_remember",
    });

    const upsert = one(trace!, "upsert_memory");
    expect(upsert.parentSpanId).toBe(tools[0]!.spanId);
    expect(upsert.attributes).toMatchObject({
      "gen_ai.operation.name": "upsert_memory",
      "gen_ai.memory.store.id": "organization:acme",
      "gen_ai.memory.record.count": 1,
    });
    const factId = upsert.attributes["gen_ai.memory.record.id"];
    expect(factId).toBeTypeOf("string");

    const search = named(trace!, "search_memory").find((s) => s.parentSpanId === tools[1]!.spanId)!;
    expect(search.attributes).toMatchObject({ "gen_ai.operation.name": "search_memory", "gen_ai.memory.record.count": 1 });

    const deleted = one(trace!, "delete_memory");
    expect(deleted.parentSpanId).toBe(tools[2]!.spanId);
    expect(deleted.attributes).toMatchObject({ "gen_ai.memory.record.id": factId, "gen_ai.memory.store.id": "organization:acme" });
    expect(contentKeys(trace!)).toEqual([]);
    expect(JSON.stringify(trace!.map((s) => s.attributes))).not.toContain("Lisbon");
  });

  it("one turn with failover, a tool call and recall: every span the issue names, linked, no content", async () => {
    const t = await createTenant();
    const fact = await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "profile", text: "The user lives in Lisbon." } });
    expect(fact.status).toBe(201);
    fakeOpenAI()
      .status(500)
      .status(500)
      .reply(call("recall", { query: "where does the user live" }))
      .reply("In Lisbon.");
    const thread = uniqueThread();
    const res = await chat(t.adminKey, {
      model: "auto",
      capabilities: ["json"],
      agent: "memory-assistant",
      thread_id: thread,
      messages: say("Where do I live?"),
    });
    expect(res.status).toBe(200);
    const [trace] = await waitForTraces(t.tenant, 1);
    // Every export so far passed OpenTelemetry's own ExportTraceServiceRequest (test/support/fake-otlp.ts).
    expect(receivedExports().flatMap((e) => e.malformed ?? [])).toEqual([]);
    const root = expectAgentRoot(trace!, "memory-assistant", thread);
    expect(root.attributes["edgeweave.tenant.id"]).toBe(t.tenant);
    const chats = trace!.filter((s) => s.name.startsWith("chat ")).sort((a, b) => Number(a.startNs - b.startNs));
    expect(chats).toHaveLength(2);
    for (const s of chats) {
      expect(s.parentSpanId).toBe(root.spanId);
      expect(s.kind).toBe("client");
      expect(s.name).toBe(`chat ${s.attributes["gen_ai.request.model"]}`);
      expect(s.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.conversation.id": thread });
      expect(s.attributes["gen_ai.usage.input_tokens"]).toBeTypeOf("number");
      expect(s.attributes["gen_ai.usage.output_tokens"]).toBeTypeOf("number");
    }
    const [first, second] = chats;
    expect(first!.attributes).toMatchObject({ "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o", "edgeweave.route.model": "gpt-4o-mini" });
    expect((first!.attributes["edgeweave.failover.attempts"] as string[]).slice(0, 2)).toEqual([
      "gpt-4o-mini retry 500 BEM-071",
      "gpt-4o-mini failover 500 BEM-071",
    ]);
    expect((first!.attributes["edgeweave.failover.attempts"] as string[]).at(-1)).toMatch(/ ok$/);
    expect(first!.attributes["gen_ai.response.finish_reasons"]).toEqual(["tool_calls"]);
    expect(second!.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
    const context = named(trace!, "search_memory").find((s) => s.parentSpanId === root.spanId)!;
    expect(context.attributes["edgeweave.memory.facts"]).toBe(1);
    const tool = one(trace!, "execute_tool recall");
    expect(tool.parentSpanId).toBe(root.spanId);
    expect(tool.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "recall", "gen_ai.tool.call.id": "call_recall" });
    expect(tool.startNs).toBeGreaterThanOrEqual(first!.endNs);
    expect(tool.endNs).toBeLessThanOrEqual(second!.startNs);
    const recalled = named(trace!, "search_memory").find((s) => s.parentSpanId === tool.spanId)!;
    expect(recalled.attributes).toMatchObject({
      "gen_ai.operation.name": "search_memory",
      "gen_ai.memory.record.count": 1,
      "gen_ai.memory.store.id": "session:" + thread + ",organization:acme",
    });
    expect(contentKeys(trace!)).toEqual([]);
    expect(JSON.stringify(trace!.map((s) => s.attributes))).not.toMatch(/Lisbon|Where do I live|where does the user live/);
  });

  it("a tool call that fails is an execute_tool span in error (BEM-080), and the run goes on", async () => {
    const t = await createTenant();
    fakeOpenAI()
      .reply(call("forget", { key: "never-stored" }))
      .reply("Nothing to forget.");
    expect((await memoryTurn(t.adminKey, uniqueThread(), "forget my city")).status).toBe(200);
    const [trace] = await waitForTraces(t.tenant, 1);
    expectWellFormed(trace!);
    const tool = one(trace!, "execute_tool forget");
    expect(tool.attributes["error.type"]).toBe("BEM-080");
    expect(tool.error).toContain("No fact with key");
    expect(one(trace!, "delete_memory").attributes["error.type"]).toBe("BEM-061");
  });
});

describe("content is opt-in per tenant", () => {
  // The one tenant vitest.config.ts lists in OTEL_CAPTURE_CONTENT_TENANTS, made once for the file.
  let made: Promise<TestTenant> | undefined;
  const contentTenant = () => (made ??= createTenant({ id: "t-trace-content" }));

  it("a tenant in OTEL_CAPTURE_CONTENT_TENANTS gets prompts, answers, tool arguments and memory records", async () => {
    const t = await contentTenant();
    fakeOpenAI()
      .reply(call2("remember", { kind: "profile", text: "The user's cat is Pixel." }))
      .reply("Noted, Pixel.");
    const res = await chat(t.adminKey, { agent: "memory-assistant", thread_id: uniqueThread(), messages: say("My cat is Pixel") });
    expect(res.status).toBe(200);
    const [trace] = await waitForTraces(t.tenant, 1);
    const root = expectWellFormed(trace!);
    expect(JSON.parse(root.attributes["gen_ai.input.messages"] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: "My cat is Pixel" }] }]);
    expect(JSON.parse(root.attributes["gen_ai.output.messages"] as string)).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "Noted, Pixel." }], finish_reason: "stop" },
    ]);
    const firstChat = trace!.filter((s) => s.name.startsWith("chat "))[0]!;
    expect(firstChat.attributes["gen_ai.input.messages"]).toContain("My cat is Pixel");
    expect(JSON.parse(firstChat.attributes["gen_ai.output.messages"] as string)[0].parts[0]).toMatchObject({ type: "tool_call", name: "remember" });
    const tool = one(trace!, "execute_tool remember");
    expect(JSON.parse(tool.attributes["gen_ai.tool.call.arguments"] as string)).toEqual({ kind: "profile", text: "The user's cat is Pixel." });
    expect(tool.attributes["gen_ai.tool.call.result"]).toContain('"kind":"profile"');
    expect(one(trace!, "create_memory").attributes["gen_ai.memory.records"]).toContain("Pixel");
  });

  it("a long prompt and answer are cut inside the messages, so each content attribute stays JSON a collector can read", async () => {
    const t = await contentTenant();
    const before = tracesOf(t.tenant).length;
    const long = "word ".repeat(8_000);
    fakeOpenAI().reply(`Echo ${long}`);
    const res = await chat(t.adminKey, { thread_id: uniqueThread(), messages: say(`Read ${long}`) });
    expect(res.status).toBe(200);
    const trace = (await waitForTraces(t.tenant, before + 1))[before];
    // The JSON was cut as a string at 16,384 characters, so it no longer parsed.
    for (const s of trace!)
      for (const k of ["gen_ai.input.messages", "gen_ai.output.messages"]) {
        const v = s.attributes[k];
        if (typeof v !== "string") continue;
        expect(v.length, `${s.name} ${k}`).toBeLessThanOrEqual(16_384);
        expect(() => JSON.parse(v), `${s.name} ${k}`).not.toThrow();
      }
    const root = expectWellFormed(trace!);
    const input = JSON.parse(root.attributes["gen_ai.input.messages"] as string) as { role: string; parts: { content: string }[] }[];
    expect(input[0]!.role).toBe("user");
    expect(input[0]!.parts[0]!.content).toMatch(/^Read word word .*…$/);
  });

  it("a prompt of 900 messages keeps its newest ones, still JSON under the cap", async () => {
    const t = await contentTenant();
    const before = tracesOf(t.tenant).length;
    fakeOpenAI().reply("ok");
    const messages = Array.from({ length: 900 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `message number ${i}` }));
    messages.push({ role: "user", content: "the newest question" });
    const res = await chat(t.adminKey, { messages });
    expect(res.status).toBe(200);
    const trace = (await waitForTraces(t.tenant, before + 1))[before]!;
    const sent = one(trace, "chat gpt-4o-mini").attributes["gen_ai.input.messages"] as string;
    expect(sent.length).toBeLessThanOrEqual(16_384);
    const kept = JSON.parse(sent) as { parts: { content: string }[] }[];
    expect(kept.length).toBeLessThan(901);
    expect(kept.at(-1)!.parts[0]!.content).toBe("the newest question");
  });
});

const call2 = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ id: `call_${name}`, name, arguments: args }] });

describe("a collector that fails changes nothing in the answer", () => {
  const turn = async (key: string, thread: string) => {
    fakeOpenAI().reply({ text: "same answer", usage: { prompt_tokens: 5, completion_tokens: 2 } });
    const res = await chat(key, { thread_id: thread, messages: say("hello") });
    const body = (await res.json()) as { choices: unknown; usage: unknown };
    return { status: res.status, choices: body.choices, usage: body.usage };
  };

  for (const how of ["refuse", "down"] as const) {
    it(`a collector that is ${how === "down" ? "unreachable" : "refusing"}: same answer, the spans dropped, counted and warned`, async () => {
      const healthy = await createTenant();
      const broken = await createTenant();
      failCollector(broken.tenant, how);
      try {
        const good = await turn(healthy.adminKey, uniqueThread());
        const bad = await turn(broken.adminKey, uniqueThread());
        expect(bad).toEqual(good);
        await waitForTraces(healthy.tenant, 1);
        const warning = async () => loggedLines().find((l) => l.includes('"where":"otlp"') && l.includes("dropped"));
        const until = Date.now() + 5000;
        while (!(await warning()) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        const line = JSON.parse((await warning()) ?? "{}") as { level?: string; message?: string; dropped_total?: number };
        expect(line.level).toBe("warn");
        expect(line.message).toMatch(how === "refuse" ? /span\(s\) dropped: collector answered 503/ : /span\(s\) dropped: .*Network connection lost/);
        expect(line.dropped_total).toBeGreaterThan(0);
        // The header secret never reaches the log.
        expect(loggedLines().join("\n")).not.toContain("cGstbGYtdGVzdDpzay1sZi10ZXN0");
      } finally {
        restoreCollector(broken.tenant);
      }
    });
  }

  it("a collector that hangs: the answer does not wait for it", async () => {
    const t = await createTenant();
    failCollector(t.tenant, "hold");
    try {
      fakeOpenAI().reply("not delayed");
      const res = await chat(t.adminKey, { thread_id: uniqueThread(), messages: say("hello") });
      expect(res.status).toBe(200);
      // The answer is here while its export is still held by the collector.
      const until = Date.now() + 5000;
      while (heldCount(t.tenant) === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(heldCount(t.tenant)).toBe(1);
      expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("not delayed");
    } finally {
      restoreCollector(t.tenant);
    }
    // Released, the held export lands.
    await waitForTraces(t.tenant, 1);
  });
});
