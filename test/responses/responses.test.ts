import { describe, expect, it } from "vitest";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant } from "../support/tenants";
import { openaiClient, tenantForRuns, wireMessages, wireText } from "../support/runs";

const tenant = tenantForRuns();

type ThreadState = { channels: { messages: { role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }[] } };
type Extended = { edgeweave: { thread_id: string; checkpoint_id: string } };

async function threadMessages(key: string, thread: string): Promise<string[]> {
  const s = (await (await api(`/v1/threads/${thread}/state`, { key })).json()) as ThreadState;
  return s.channels.messages.map((m) => `${m.role}:${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`);
}

describe("POST /v1/responses with the official openai client", () => {
  it("answers a plain input and stores it as a checkpoint of a new thread", async () => {
    const fake = fakeOpenAI().reply("Hello Ada!");
    const client = openaiClient(tenant().adminKey);
    const r = await client.responses.create({ model: "gpt-4o-mini", input: "Hi, I am Ada.", instructions: "Be brief.", metadata: { app: "test" } });
    expect(r.object).toBe("response");
    expect(r.id).toMatch(/^resp_/);
    expect(r.status).toBe("completed");
    expect(r.output_text).toBe("Hello Ada!");
    expect(r.model).toBe("gpt-4o-mini");
    expect(r.metadata).toEqual({ app: "test" });
    expect(r.instructions).toBe("Be brief.");
    expect(r.usage?.input_tokens).toBe(12);
    expect(r.usage?.output_tokens).toBe(5);
    expect(r.usage?.total_tokens).toBe(17);
    const sent = wireMessages(fake.last.body).map((m) => `${m.role}:${wireText(m)}`);
    expect(sent).toEqual(["system:Be brief.", "user:Hi, I am Ada."]);
    const ew = (r as unknown as Extended).edgeweave;
    // Instructions are per call: only the turn is stored.
    expect(await threadMessages(tenant().adminKey, ew.thread_id)).toEqual(["user:Hi, I am Ada.", "assistant:Hello Ada!"]);
  });

  it("streams the Responses event sequence and stores the reply", async () => {
    fakeOpenAI().reply({ text: "Streamed answer", chunks: ["Stream", "ed ", "answer"] });
    const client = openaiClient(tenant().adminKey);
    const stream = await client.responses.create({ model: "gpt-4o-mini", input: "stream please", stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const ev of stream) events.push(ev);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("response.created");
    expect(types[1]).toBe("response.in_progress");
    expect(types).toContain("response.output_item.added");
    expect(types).toContain("response.content_part.added");
    expect(types.filter((t) => t === "response.output_text.delta")).toHaveLength(3);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events.at(-1) as Extract<ResponseStreamEvent, { type: "response.completed" }>;
    expect(completed.response.status).toBe("completed");
    const out = completed.response.output[0];
    expect(out?.type === "message" && out.content[0]?.type === "output_text" ? out.content[0].text : "").toBe("Streamed answer");
    const stored = await client.responses.retrieve(completed.response.id);
    expect(stored.output_text).toBe("Streamed answer");
  });

  it("the SDK's responses.stream helper reads it (final response, text deltas)", async () => {
    fakeOpenAI().reply("helper text");
    const client = openaiClient(tenant().adminKey);
    const s = client.responses.stream({ model: "gpt-4o-mini", input: "hi" });
    let deltas = "";
    s.on("response.output_text.delta", (e) => (deltas += e.delta));
    const final = await s.finalResponse();
    expect(deltas).toBe("helper text");
    expect(final.output_text).toBe("helper text");
  });

  it("a stream cut by the provider ends with response.failed and an error; nothing is stored", async () => {
    fakeOpenAI().cut({ text: "partial answer that never finishes" });
    const client = openaiClient(tenant().adminKey);
    const res = await api("/v1/responses", { key: tenant().adminKey, body: { model: "gpt-4o-mini", input: "cut me", stream: true } });
    const text = await res.text();
    expect(text).toContain("event: response.failed");
    expect(text).toContain("event: error");
    expect(text).not.toContain("response.completed");
    const failed = JSON.parse(
      text
        .split("\n")
        .find((l) => l.startsWith("data: ") && l.includes('"response.failed"'))!
        .slice(6),
    ) as { response: { id: string; status: string } };
    expect(failed.response.status).toBe("failed");
    await expect(client.responses.retrieve(failed.response.id)).rejects.toMatchObject({ status: 404 });
  });

  it("a function tool's strict is echoed as it was sent to the model: as given, and null when the request left it out", async () => {
    // It was echoed `true` when left out, while the provider was sent no strict (a mode the response claimed and never applied).
    const fake = fakeOpenAI().reply("ok").reply("ok");
    const client = openaiClient(tenant().adminKey);
    const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    const plain = await client.responses.create({ model: "gpt-4o-mini", input: "hi", tools: [{ type: "function", name: "w", parameters } as never] });
    expect((plain.tools[0] as { strict: unknown }).strict).toBeNull();
    expect((fake.calls[0]!.body.tools as { function: object }[])[0]!.function).not.toHaveProperty("strict");
    const strict = await client.responses.create({ model: "gpt-4o-mini", input: "hi", tools: [{ type: "function", name: "w", parameters, strict: true }] });
    expect((strict.tools[0] as { strict: unknown }).strict).toBe(true);
    expect((fake.calls[1]!.body.tools as { function: { strict?: boolean } }[])[0]!.function.strict).toBe(true);
  });

  it("calls functions: function_call items with call_id, continued by function_call_output", async () => {
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Paris" } }] })
      .reply("It is sunny in Paris.");
    const client = openaiClient(tenant().adminKey);
    const tools = [
      {
        type: "function" as const,
        name: "get_weather",
        description: "Weather for a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        strict: true,
      },
    ];
    const first = await client.responses.create({ model: "gpt-4o-mini", input: "Weather in Paris?", tools });
    const call = first.output.find((o) => o.type === "function_call");
    // A stored response's call carries its item id as call_id (it names the thread); the provider's id stays in the thread.
    expect(call).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(call?.type === "function_call" && call.call_id).toBe(call?.id);
    expect(fake.calls[0]!.body.tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: tools[0]!.parameters, strict: true } },
    ]);

    const second = await client.responses.create({
      model: "gpt-4o-mini",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call?.type === "function_call" ? call.call_id : "", output: '{"sky":"sunny"}' }],
      tools,
    });
    expect(second.output_text).toBe("It is sunny in Paris.");
    const sent = wireMessages(fake.calls[1]!.body) as { role: string; tool_call_id?: string; tool_calls?: { id: string }[] }[];
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(sent[1]!.tool_calls?.[0]?.id).toBe("call_w1");
    expect(sent[2]!.tool_call_id).toBe("call_w1");
  });

  it("a function_call_output for an unknown call_id is 400 BEM-101 and stores nothing", async () => {
    fakeOpenAI().reply("first");
    const client = openaiClient(tenant().adminKey);
    const first = await client.responses.create({ model: "gpt-4o-mini", input: "hello" });
    const thread = (first as unknown as Extended).edgeweave.thread_id;
    const before = await threadMessages(tenant().adminKey, thread);
    const res = await api("/v1/responses", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", previous_response_id: first.id, input: [{ type: "function_call_output", call_id: "call_nope", output: "x" }] },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-101");
    expect(await threadMessages(tenant().adminKey, thread)).toEqual(before);
    const stateless = await api("/v1/responses", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", input: [{ type: "function_call_output", call_id: "call_x", output: "x" }] },
    });
    expect(stateless.status).toBe(400);
  });

  it("passes text.format as response_format", async () => {
    const fake = fakeOpenAI().reply('{"name":"Ada","age":36}');
    const client = openaiClient(tenant().adminKey);
    const schema = {
      type: "object",
      properties: { name: { type: "string" }, age: { type: "integer" } },
      required: ["name", "age"],
      additionalProperties: false,
    };
    const r = await client.responses.create({
      model: "gpt-4o-mini",
      input: "Who?",
      text: { format: { type: "json_schema", name: "person", schema, strict: true } },
    });
    expect(JSON.parse(r.output_text)).toEqual({ name: "Ada", age: 36 });
    expect(r.text?.format).toEqual({ type: "json_schema", name: "person", schema, strict: true });
    expect(fake.last.body.response_format).toEqual({ type: "json_schema", json_schema: { name: "person", schema, strict: true } });
  });

  it("chains by previous_response_id: the second upstream request contains the first turn", async () => {
    const fake = fakeOpenAI().reply("Hello Bob!").reply("Your name is Bob.");
    const client = openaiClient(tenant().adminKey);
    const first = await client.responses.create({ model: "gpt-4o-mini", input: "Hi! My name is Bob." });
    const second = await client.responses.create({ model: "gpt-4o-mini", input: "What is my name?", previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    expect(wireMessages(fake.calls[1]!.body).map((m) => `${m.role}:${wireText(m)}`)).toEqual([
      "user:Hi! My name is Bob.",
      "assistant:Hello Bob!",
      "user:What is my name?",
    ]);
    expect((second as unknown as Extended).edgeweave.thread_id).toBe((first as unknown as Extended).edgeweave.thread_id);
  });

  it("an older previous_response_id continues as a new branch; the old branch stays in history", async () => {
    const fake = fakeOpenAI().reply("A1").reply("A2").reply("B2");
    const client = openaiClient(tenant().adminKey);
    const r1 = await client.responses.create({ model: "gpt-4o-mini", input: "Q1" });
    const r2 = await client.responses.create({ model: "gpt-4o-mini", input: "Q2", previous_response_id: r1.id });
    const b2 = await client.responses.create({ model: "gpt-4o-mini", input: "Q2 edited", previous_response_id: r1.id });
    expect(wireMessages(fake.calls[2]!.body).map(wireText)).toEqual(["Q1", "A1", "Q2 edited"]);
    const thread = (b2 as unknown as Extended).edgeweave.thread_id;
    expect(await threadMessages(tenant().adminKey, thread)).toEqual(["user:Q1", "assistant:A1", "user:Q2 edited", "assistant:B2"]);
    // r2 is still a checkpoint: continuing it sees its branch.
    fake.reply("A3");
    await client.responses.create({ model: "gpt-4o-mini", input: "Q3", previous_response_id: r2.id });
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1", "Q2", "A2", "Q3"]);
  });

  it("a previous_response_id overtaken while its request waited for the thread continues as a branch from it", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const completion = (text: string) => ({
      id: "chatcmpl-held",
      object: "chat.completion",
      created: 0,
      model: "gpt-4o-mini",
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
    const fake = fakeOpenAI()
      .reply("A1")
      .respond(async () => {
        await gate; // another turn holds the thread at the model
        return Response.json(completion("B1"));
      })
      .reply("C1");
    const client = openaiClient(tenant().adminKey);
    const r1 = await client.responses.create({ model: "gpt-4o-mini", input: "Q1" });
    const thread = (r1 as unknown as Extended).edgeweave.thread_id;
    const other = api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "QB" }] },
    });
    while (fake.calls.length < 2) await new Promise((r) => setTimeout(r, 5));
    // r1 is the head when this is sent; by the time it holds the thread, the other turn has saved after r1.
    const chained = client.responses.create({ model: "gpt-4o-mini", input: "Q2", previous_response_id: r1.id });
    await new Promise((r) => setTimeout(r, 50));
    release();
    expect((await other).status).toBe(200);
    await chained;
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1", "Q2"]);
    expect(await threadMessages(tenant().adminKey, thread)).toEqual(["user:Q1", "assistant:A1", "user:Q2", "assistant:C1"]);
  });

  it("store: false runs without saving (also on a stored previous response)", async () => {
    const fake = fakeOpenAI().reply("kept").reply("not kept");
    const client = openaiClient(tenant().adminKey);
    const first = await client.responses.create({ model: "gpt-4o-mini", input: "remember me" });
    const thread = (first as unknown as Extended).edgeweave.thread_id;
    const eph = await client.responses.create({ model: "gpt-4o-mini", input: "ephemeral", previous_response_id: first.id, store: false });
    expect((eph as unknown as { store: boolean }).store).toBe(false);
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["remember me", "kept", "ephemeral"]);
    expect(await threadMessages(tenant().adminKey, thread)).toEqual(["user:remember me", "assistant:kept"]);
    await expect(client.responses.retrieve(eph.id)).rejects.toMatchObject({ status: 404 });
  });

  it("retrieves, lists input items, deletes", async () => {
    fakeOpenAI().reply("stored reply");
    const client = openaiClient(tenant().adminKey);
    const r = await client.responses.create({
      model: "gpt-4o-mini",
      input: [
        { role: "user", content: [{ type: "input_text", text: "part one" }] },
        { role: "user", content: "part two" },
      ],
    });
    const got = await client.responses.retrieve(r.id);
    expect(got.id).toBe(r.id);
    expect(got.output_text).toBe("stored reply");
    const items = await client.responses.inputItems.list(r.id, { order: "asc" });
    const texts = items.data.map((i) => (i.type === "message" && i.content[0]?.type === "input_text" ? i.content[0].text : "?"));
    expect(texts).toEqual(["part one", "part two"]);
    const desc = await client.responses.inputItems.list(r.id);
    expect(desc.data.map((i) => i.id)).toEqual(items.data.map((i) => i.id).reverse());
    await client.responses.delete(r.id);
    await expect(client.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
    const again = await api(`/v1/responses/${r.id}`, { key: tenant().adminKey, method: "DELETE" });
    expect(again.status).toBe(404);
  });

  it("another tenant's response id is 404 coded, never its data", async () => {
    fakeOpenAI().reply("secret reply");
    const r = await openaiClient(tenant().adminKey).responses.create({ model: "gpt-4o-mini", input: "secret question" });
    const other = await createTenant();
    for (const res of [
      await api(`/v1/responses/${r.id}`, { key: other.adminKey }),
      await api(`/v1/responses/${r.id}/input_items`, { key: other.adminKey }),
      await api(`/v1/responses/${r.id}`, { key: other.adminKey, method: "DELETE" }),
      await api("/v1/responses", { key: other.adminKey, body: { model: "gpt-4o-mini", input: "x", previous_response_id: r.id } }),
    ]) {
      expect(res.status).toBe(404);
      const text = await res.text();
      expect(JSON.parse(text).error.code).toBe("BEM-100");
      expect(text).not.toContain("secret");
    }
    expect((await api(`/v1/responses/${r.id}`, { key: tenant().adminKey })).status).toBe(200);
  });

  it("rejects previous_response_id together with conversation (400 BEM-103)", async () => {
    const res = await api("/v1/responses", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", input: "x", previous_response_id: "resp_1", conversation: "c1" },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-103");
  });
});

describe("deleting a thread deletes its responses and its conversation record", () => {
  it("DELETE /v1/threads/:id: the thread's stored responses are 404, the conversation is gone", async () => {
    fakeOpenAI().reply("one").reply("two");
    const key = tenant().adminKey;
    const client = openaiClient(key);
    const conv = await client.conversations.create({ metadata: { topic: "x" } });
    const first = await client.responses.create({ model: "gpt-4o-mini", input: "first", conversation: conv.id });
    const second = await client.responses.create({ model: "gpt-4o-mini", input: "second", previous_response_id: first.id });
    expect((await api(`/v1/responses/${second.id}`, { key })).status).toBe(200);

    expect((await api(`/v1/threads/${conv.id}`, { key, method: "DELETE" })).status).toBe(204);
    for (const id of [first.id, second.id]) {
      const res = await api(`/v1/responses/${id}`, { key });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-100");
    }
    expect((await api(`/v1/conversations/${conv.id}`, { key })).status).toBe(404);
  });
});
