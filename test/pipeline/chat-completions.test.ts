import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { fakeOllama } from "../support/fake-ollama";
import { fakeAnthropic } from "../support/fake-anthropic";
import { api, createKey } from "../support/tenants";
import { checkToolPairs } from "../support/tool-pairs-oracle";
import { clearUpstream } from "../support/upstream";
import { openaiClient, snapshot, tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";
import { estimateTokens } from "../../src/core/tokens";

const tenant = tenantForRuns();

// The openai client sends unknown body fields as given; thread_id is our extension.
type WithThread = { thread_id?: string; memory_scopes?: string[]; agent?: string };

describe("POST /v1/chat/completions with the official openai client", () => {
  it("is stateful with thread_id: the second upstream request carries the first turn", async () => {
    const fake = fakeOpenAI().reply("Hello Bob!").reply("Your name is Bob.");
    const client = openaiClient(tenant().adminKey);
    const thread = uniqueThread();
    const first = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Hi! My name is Bob." }],
      thread_id: thread,
    } as WithThread & OpenAIParams);
    expect(first.choices[0]!.message.content).toBe("Hello Bob!");
    const second = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "What is my name?" }],
      thread_id: thread,
    } as WithThread & OpenAIParams);
    expect(second.choices[0]!.message.content).toBe("Your name is Bob.");

    const sent = wireMessages(fake.calls[1]!.body).map((m) => `${m.role}:${wireText(m)}`);
    expect(sent).toEqual(["user:Hi! My name is Bob.", "assistant:Hello Bob!", "user:What is my name?"]);
    expect(fake.calls[1]!.headers.authorization).toBe("Bearer sk-test-openai");

    const state = (await (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).json()) as {
      channels: { messages: { role: string; content: string }[] };
    };
    expect(state.channels.messages.map((m) => m.content)).toEqual(["Hi! My name is Bob.", "Hello Bob!", "What is my name?", "Your name is Bob."]);
  });

  it("takes the thread from the X-Thread-Id header too", async () => {
    const fake = fakeOpenAI().reply("one").reply("two");
    const client = openaiClient(tenant().adminKey);
    const thread = uniqueThread();
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "a" }] }, { headers: { "X-Thread-Id": thread } });
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "b" }] }, { headers: { "X-Thread-Id": thread } });
    expect(wireMessages(fake.calls[1]!.body).map(wireText)).toEqual(["a", "one", "b"]);
  });

  it("is stateless without a thread: nothing is stored, the whole conversation is sent", async () => {
    const fake = fakeOpenAI().reply("ok");
    const res = await openaiClient(tenant().adminKey).chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "Be terse." },
        { role: "user", content: "x" },
        { role: "assistant", content: "y" },
        { role: "user", content: "z" },
      ],
    });
    expect(res.choices[0]!.message.content).toBe("ok");
    expect(wireMessages(fake.last.body).map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    const list = (await (await api("/v1/threads", { key: tenant().adminKey })).json()) as { threads: unknown[] };
    expect(JSON.stringify(list)).not.toContain("stateless");
  });

  it("loads facts as [kind scope] system messages for the agent's scopes", async () => {
    const r = await api("/v1/memory/facts", { key: tenant().adminKey, body: { scope: "organization:acme", kind: "style", text: "Use short sentences." } });
    expect(r.status).toBe(201);
    const fake = fakeOpenAI().reply("Sure.");
    await openaiClient(tenant().adminKey).chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Write a note" }],
      thread_id: uniqueThread(),
      agent: "assistant",
    } as WithThread & OpenAIParams);
    const sent = wireMessages(fake.last.body);
    expect(sent[0]!.role).toBe("system"); // the agent's prompt first
    // The scope's style facts, an admin's rules: one system message, a `[kind scope] text` line each.
    const facts = sent.filter((m) => m.role === "system" && wireText(m).startsWith("[style organization:acme] "));
    expect(facts).toHaveLength(1);
    expect(wireText(facts[0]!).split("\n")).toContain("[style organization:acme] Use short sentences.");
    expect(wireText(sent[sent.length - 1]!)).toBe("Write a note");
  });

  it("trims the history to the chosen model's max_tokens, keeping the newest", async () => {
    const thread = uniqueThread();
    const long = "x".repeat(2000); // ~500 tokens each
    const seed = Array.from({ length: 20 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i} ${long}` }));
    const put = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey, body: { ops: [{ op: "append", messages: seed }] } });
    expect(put.status).toBe(200);
    const fake = fakeOllama().reply("trimmed");
    await openaiClient(tenant().adminKey).chat.completions.create({
      model: "llama3.2",
      messages: [{ role: "user", content: "latest" }],
      thread_id: thread,
    } as WithThread & OpenAIParams);
    const sent = wireMessages(fake.last.body) as { role: "user" | "assistant"; content: string }[];
    const tokens = sent.reduce((n, m) => n + estimateTokens(m), 0);
    expect(tokens).toBeLessThanOrEqual(4096); // llama3.2's max_tokens in models.yaml
    expect(sent.length).toBeGreaterThan(2);
    expect(sent.length).toBeLessThan(21);
    expect(sent[sent.length - 1]!.content).toBe("latest");
    expect(sent[sent.length - 2]!.content.startsWith("19 ")).toBe(true); // the newest history kept
  });

  it("streams chat.completion.chunk events ending in [DONE], with usage when asked, and saves the reply", async () => {
    fakeOpenAI().reply({ text: "streamed answer", chunks: ["stre", "amed ", "answer"] });
    const thread = uniqueThread();
    const stream = await openaiClient(tenant().adminKey).chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "stream please" }],
      stream: true,
      stream_options: { include_usage: true },
      thread_id: thread,
    } as WithThread & OpenAIStreamParams);
    let text = "";
    let usage: unknown;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("streamed answer");
    expect(finish).toBe("stop");
    expect(usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
    const state = (await (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).json()) as { channels: { messages: { content: string }[] } };
    expect(state.channels.messages.map((m) => m.content)).toEqual(["stream please", "streamed answer"]);
  });

  // The first chunk said content "" before the answer was known: the SDK's stream helper accumulated a
  // calls-only answer to content "" where the same answer unstreamed has null.
  for (const [provider, model] of [
    ["openai", "gpt-4o-mini"],
    ["anthropic", "claude-3-5-haiku"],
  ] as const) {
    const fake = provider === "openai" ? fakeOpenAI : fakeAnthropic;
    for (const reply of [{ tool_calls: [{ id: "call_w", name: "get_weather", arguments: { city: "Bern" } }] }, { text: "Sunny in Bern." }]) {
      it(`${provider}: the openai SDK's stream helper accumulates what the unstreamed answer holds (${reply.text ? "text" : "calls only"})`, async () => {
        fake().reply(reply).reply(reply);
        const client = openaiClient(tenant().adminKey);
        const params = {
          model,
          messages: [{ role: "user" as const, content: "weather in Bern?" }],
          tools: [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }],
        };
        const plain = (await client.chat.completions.create(params)).choices[0]!;
        const streamed = (await client.chat.completions.stream(params).finalChatCompletion()).choices[0]!;
        expect(plain.message.content).toBe(reply.text ?? null);
        expect(streamed.message.content).toBe(plain.message.content);
        expect(streamed.message.tool_calls ?? []).toEqual(plain.message.tool_calls ?? []);
        expect(streamed.finish_reason).toBe(plain.finish_reason);
      });
    }
  }

  it("the first chunk opens as OpenAI's does: the role, the content so far and refusal: null", async () => {
    fakeOpenAI().reply({ text: "hi there", chunks: ["hi ", "there"] });
    const res = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "hi" }] },
    });
    const first = (await res.text()).split("\n").find((l) => l.startsWith("data: "))!;
    expect((JSON.parse(first.slice(6)) as { choices: { delta: unknown }[] }).choices[0]!.delta).toEqual({ role: "assistant", content: "", refusal: null });
  });

  it("a streamed turn of an agent with server tools streams what the unstreamed answer holds: the server's own calls stay in the run", async () => {
    // Every step's deltas reached the client: the server tool's call came as tool_calls, which the SDK's helper kept.
    const fake = fakeOpenAI();
    const client = openaiClient(tenant().adminKey);
    const params = {
      model: "gpt-4o-mini",
      agent: "planner",
      context: { user_name: "Ann" },
      messages: [{ role: "user" as const, content: "what did I say?" }],
    };
    for (let i = 0; i < 2; i++)
      fake.reply({ tool_calls: [{ id: `call_s${i}`, name: "get_last_user_message", arguments: {} }] }).reply("You asked what you said.");
    const plain = (await client.chat.completions.create(params as never)).choices[0]!;
    const streamed = (await client.chat.completions.stream(params as never).finalChatCompletion()).choices[0]!;
    expect(plain.message).toMatchObject({ content: "You asked what you said." });
    expect(plain.message.tool_calls ?? []).toEqual([]);
    expect(streamed.message.content).toBe(plain.message.content);
    expect(streamed.message.tool_calls ?? []).toEqual([]);
    expect(streamed.finish_reason).toBe(plain.finish_reason);
  });

  it("names the model and the reason in headers and body", async () => {
    fakeOpenAI().reply("hi");
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-edgeweave-model")).toBe("gpt-4o-mini");
    expect(res.headers.get("x-edgeweave-route")).toBeTruthy();
    const body = (await res.json()) as { model: string; edgeweave: { routing: { model: string; candidates: string[]; attempts: { outcome: string }[] } } };
    expect(body.model).toBe("gpt-4o-mini");
    expect(body.edgeweave.routing.attempts).toEqual([{ model: "gpt-4o-mini", outcome: "ok" }]);
  });

  it("the output limit reaches the provider: max_completion_tokens wins, max_tokens otherwise, null is no limit", async () => {
    const fake = fakeOpenAI().otherwise("ok");
    const cases: [Record<string, number | null>, number | undefined][] = [
      [{ max_tokens: 7 }, 7],
      [{ max_completion_tokens: 11, max_tokens: 7 }, 11],
      [{ max_completion_tokens: null, max_tokens: 5 }, 5],
      [{ max_completion_tokens: null, max_tokens: null }, undefined],
    ];
    for (const [limits, sent] of cases) {
      const res = await api("/v1/chat/completions", {
        key: tenant().adminKey,
        body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], ...limits },
      });
      expect(res.status, JSON.stringify(limits)).toBe(200);
      expect((fake.calls.at(-1)!.body as { max_completion_tokens?: number }).max_completion_tokens, JSON.stringify(limits)).toBe(sent);
    }
    expect(fake.calls).toHaveLength(cases.length);
  });

  it("passes client-side tools through and stores the assistant's tool call and the client's result", async () => {
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_1", name: "get_weather", arguments: { city: "Oslo" } }] })
      .reply("It is sunny in Oslo.");
    const client = openaiClient(tenant().adminKey);
    const thread = uniqueThread();
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const first = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools,
      thread_id: thread,
    } as WithThread & OpenAIParams);
    expect(first.choices[0]!.finish_reason).toBe("tool_calls");
    expect(first.choices[0]!.message.tool_calls?.[0]).toMatchObject({ id: "call_1", function: { name: "get_weather" } });
    expect((fake.calls[0]!.body as { tools: unknown[] }).tools).toHaveLength(1);
    const second = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "tool", tool_call_id: "call_1", content: "sunny" }],
      tools,
      thread_id: thread,
    } as WithThread & OpenAIParams);
    expect(second.choices[0]!.message.content).toBe("It is sunny in Oslo.");
    expect(wireMessages(fake.calls[1]!.body).map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
  });

  it("a tool call left unanswered (a user message came instead of its result) never reaches a provider: the thread keeps it, every later turn's request is valid", async () => {
    // Both providers refuse a call without its result (OpenAI: "must be followed by tool messages";
    // Anthropic: a tool_use without its tool_result), so each later turn on the thread failed with
    // 502 BEM-073, by any key: a member reaching a shared thread could stop it so, and so did a UI
    // whose user cancelled a pending tool call and typed on.
    const member = (await createKey(tenant().tenant, { role: "member", scopes: ["session:*"] })).key;
    const thread = uniqueThread();
    const abandoned = {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [{ id: "call_gone", type: "function", function: { name: "lookup", arguments: "{}" } }],
    };
    fakeOpenAI().reply("Fine.");
    const planted = await api("/v1/chat/completions", {
      key: member,
      body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "Find it." }, abandoned, { role: "user", content: "Never mind." }] },
    });
    expect(planted.status).toBe(200);
    const turn = async (model: string, content: string) =>
      (await api("/v1/chat/completions", { key: tenant().adminKey, body: { model, thread_id: thread, messages: [{ role: "user", content }] } })).status;
    const openai = fakeOpenAI().reply("Still here.");
    expect(await turn("gpt-4o-mini", "Next?")).toBe(200);
    const wire = wireMessages(openai.calls[0]!.body) as unknown as Parameters<typeof checkToolPairs>[0];
    expect(checkToolPairs(wire, "openai")).toEqual([]);
    expect(wireMessages(openai.calls[0]!.body).map(wireText)).toEqual(expect.arrayContaining(["Let me look.", "Never mind.", "Next?"]));
    const anthropic = fakeAnthropic().reply({ text: "Still here." });
    expect(await turn("claude-3-5-haiku", "And now?")).toBe(200);
    expect(JSON.stringify(anthropic.last.body)).not.toContain("call_gone");
    // The stored thread is as it happened.
    const stored = (await (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).json()) as {
      channels: { messages: { tool_calls?: { id: string }[] }[] };
    };
    expect(stored.channels.messages.some((m) => m.tool_calls?.[0]?.id === "call_gone")).toBe(true);
    // Conversation items store without a model call, so a real provider never refused the planting turn there.
    const items = [
      { type: "function_call", call_id: "call_items", name: "lookup", arguments: "{}" },
      { type: "message", role: "user", content: "Forget that." },
    ];
    expect((await api(`/v1/conversations/${thread}/items`, { key: member, body: { items } })).status).toBe(200);
    const again = fakeOpenAI().reply("Still here.");
    expect(await turn("gpt-4o-mini", "Well?")).toBe(200);
    expect(checkToolPairs(wireMessages(again.calls[0]!.body) as unknown as Parameters<typeof checkToolPairs>[0], "openai")).toEqual([]);
  });
});

type OpenAIParams = import("openai").OpenAI.ChatCompletionCreateParamsNonStreaming;
type OpenAIStreamParams = import("openai").OpenAI.ChatCompletionCreateParamsStreaming;

describe("a failed run changes nothing", () => {
  it("upstream 401: no failover, coded 502, thread unchanged", async () => {
    const thread = uniqueThread();
    fakeOpenAI().reply("first");
    await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "one" }], thread_id: thread },
    });
    const before = await snapshot(tenant().adminKey, thread);
    clearUpstream();
    const fake = fakeOpenAI().status(401);
    const res = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "auto", capabilities: ["json"], messages: [{ role: "user", content: "two" }], thread_id: thread },
    });
    expect(res.status).toBe(424);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-073");
    expect(fake.calls).toHaveLength(1);
    expect(await snapshot(tenant().adminKey, thread)).toEqual(before);
  });
});
