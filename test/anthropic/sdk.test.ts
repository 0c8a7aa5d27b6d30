import Anthropic, {
  type APIError,
  AuthenticationError,
  BadRequestError,
  ContentTooLargeError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from "@anthropic-ai/sdk";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { toChat, tokensOf } from "../../src/pipeline/prompt";
import { messagesToTurn } from "../../src/anthropic/to-turn";
import { tenantForRuns, uniqueThread, wireMessages } from "../support/runs";
import { fakeAnthropic } from "../support/fake-anthropic";
import type { FakeProvider } from "../support/fake-llm";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";

/**
 * Issue 22: the official @anthropic-ai/sdk against the worker's POST /v1/messages, with an
 * Anthropic-format upstream and an OpenAI-format one behind it (the only fakes: the providers' wire).
 */
const tenant = tenantForRuns({ memberScopes: ["session:cc-*", "session:mine-*"] });

/** What the SDK sent last (its own anthropic-version among the headers). */
let lastSent: Request | undefined;
const client = (key: string, headers: Record<string, string> = {}) =>
  new Anthropic({
    apiKey: key,
    baseURL: "http://x",
    maxRetries: 0,
    defaultHeaders: headers,
    fetch: (url: RequestInfo | URL, init?: RequestInit) => {
      lastSent = new Request(url, init);
      return exports.default.fetch(lastSent.clone());
    },
  });

type Upstream = { name: string; model: string; fake: () => FakeProvider; provider: "anthropic" | "openai" };
const UPSTREAMS: Upstream[] = [
  // Claude Code's dated name, through models.yaml's `claude-sonnet-*` alias.
  { name: "Anthropic-format upstream", model: "claude-sonnet-4-5-20250929", fake: () => fakeAnthropic(), provider: "anthropic" },
  { name: "OpenAI-format upstream", model: "gpt-4o-mini", fake: () => fakeOpenAI(), provider: "openai" },
];

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

describe.each(UPSTREAMS)("@anthropic-ai/sdk against /v1/messages, $name", ({ model, fake, provider }) => {
  it("messages.create: the answer, Anthropic's usage and stop_reason, the routed model", async () => {
    const up = fake().reply({ text: "Hello from upstream", usage: { prompt_tokens: 21, completion_tokens: 4 } });
    const msg = await client(tenant().adminKey).messages.create({ model, max_tokens: 256, messages: [{ role: "user", content: "Hi" }] });
    expect(msg.type).toBe("message");
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.role).toBe("assistant");
    expect(msg.content).toEqual([{ type: "text", text: "Hello from upstream" }]);
    expect(msg.stop_reason).toBe("end_turn");
    expect(msg.usage.output_tokens).toBe(4);
    expect(msg.usage.input_tokens).toBe(21);
    expect(msg.model).toBe(provider === "anthropic" ? "claude-sonnet-4" : "gpt-4o-mini");
    expect(up.calls).toHaveLength(1);
  });

  it("messages.stream() and finalMessage(): text deltas in order, the same Message at the end", async () => {
    fake().reply({ text: "Streamed answer", chunks: ["Stream", "ed ", "answer"] });
    const stream = client(tenant().adminKey).messages.stream({ model, max_tokens: 256, messages: [{ role: "user", content: "Stream please" }] });
    const deltas: string[] = [];
    stream.on("text", (t) => deltas.push(t));
    const final = await stream.finalMessage();
    expect(deltas.join("")).toBe("Streamed answer");
    expect(final.content).toEqual([{ type: "text", text: "Streamed answer" }]);
    expect(final.stop_reason).toBe("end_turn");
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it("a tool round trip: tool_use → tool_result → answer, streamed and not", async () => {
    const up = fake()
      .reply({ tool_calls: [{ id: "toolu_rt1", name: "get_weather", arguments: { city: "Oslo" } }] })
      .reply("It is raining in Oslo.")
      .reply({ tool_calls: [{ id: "toolu_rt2", name: "get_weather", arguments: { city: "Rome" } }] });
    const c = client(tenant().adminKey);
    const ask: Anthropic.MessageParam = { role: "user", content: "Weather in Oslo?" };
    const first = await c.messages.create({ model, max_tokens: 256, tools: [weather], messages: [ask] });
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content.find((b) => b.type === "tool_use");
    expect(use).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Oslo" } });
    const second = await c.messages.create({
      model,
      max_tokens: 256,
      tools: [weather],
      messages: [
        ask,
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use!.type === "tool_use" ? use!.id : "", content: "rain, 8°C" }] },
      ],
    });
    expect(second.content).toEqual([{ type: "text", text: "It is raining in Oslo." }]);
    // The tool result reached the provider in its own wire format.
    const sent = JSON.stringify(up.calls[1]!.body);
    if (provider === "anthropic") {
      expect(up.calls[1]!.body.messages.at(-1).content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_rt1", content: "rain, 8°C" });
      expect(up.calls[1]!.body.tools[0]).toMatchObject({ name: "get_weather", input_schema: weather.input_schema });
    } else {
      expect(wireMessages(up.calls[1]!.body).at(-1)).toMatchObject({ role: "tool", tool_call_id: "toolu_rt1", content: "rain, 8°C" });
      expect(sent).toContain('"name":"get_weather"');
    }
    // Streamed: input_json_delta pieces add up to the arguments.
    const streamed = await c.messages.stream({ model, max_tokens: 256, tools: [weather], messages: [{ role: "user", content: "And Rome?" }] }).finalMessage();
    expect(streamed.stop_reason).toBe("tool_use");
    expect(streamed.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: { city: "Rome" } });
  });

  it("images, base64 and url, reach the provider as its image input", async () => {
    const up = fake().reply("A tiny image.");
    await client(tenant().adminKey).messages.create({
      model: provider === "anthropic" ? model : "gpt-4o-mini",
      max_tokens: 64,
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
            { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
            { type: "text", text: "What are these?" },
          ],
        },
      ],
    });
    const content = up.last.body.messages.at(-1).content;
    if (provider === "anthropic")
      expect(content).toEqual([
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
        { type: "text", text: "What are these?" },
      ]);
    else
      expect(content).toEqual([
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
        { type: "text", text: "What are these?" },
      ]);
  });

  it("countTokens: the estimate the budgets use, without calling a provider", async () => {
    const up = fake();
    const params = { model, system: "Be brief.", messages: [{ role: "user" as const, content: "How many tokens is this sentence?" }] };
    const counted = await client(tenant().adminKey).messages.countTokens(params);
    const { messages } = messagesToTurn({ ...params, max_tokens: 1 });
    expect(counted.input_tokens).toBe(tokensOf(messages.map(toChat)));
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(up.calls).toHaveLength(0);
  });

  it("max_tokens above the model's max_output_tokens is clamped, and said in X-Edgeweave-Warnings", async () => {
    const up = fake().reply("ok");
    const res = await client(tenant().adminKey)
      // An explicit timeout: the SDK refuses a large max_tokens without streaming otherwise.
      .messages.create({ model, max_tokens: 200_000, messages: [{ role: "user", content: "Long answer please" }] }, { timeout: 30_000 })
      .withResponse();
    const limit = provider === "anthropic" ? 64000 : 16384;
    expect(res.response.headers.get("x-edgeweave-warnings")).toContain(`max_tokens 200000 clamped to ${limit}`);
    const sent = up.last.body;
    expect(provider === "anthropic" ? sent.max_tokens : sent.max_completion_tokens).toBe(limit);
  });

  it("each failure is the SDK's typed error, with our code in bem_code", async () => {
    const c = client(tenant().adminKey);
    const bem = (e: unknown) => ((e as APIError).error as { error: { bem_code: string } }).error.bem_code;
    const fails = async (p: Promise<unknown>) =>
      p.then(
        () => expect.fail("expected an error"),
        (e: unknown) => e,
      );

    const notFound = await fails(c.messages.create({ model: "claude-sonet-4", max_tokens: 8, messages: [{ role: "user", content: "x" }] }));
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(bem(notFound)).toBe("BEM-105");
    expect((notFound as APIError).message).toContain("Closest configured: claude-sonnet-4");

    const auth = await fails(
      client("ew_wrong_key_000000000000000000000000").messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: "x" }] }),
    );
    expect(auth).toBeInstanceOf(AuthenticationError);
    expect(((auth as APIError).error as { error: { type: string } }).error.type).toBe("authentication_error");

    const denied = await fails(
      client(tenant().memberKey).messages.create({
        model,
        max_tokens: 8,
        thread_id: "not-granted",
        messages: [{ role: "user", content: "x" }],
      } as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    expect(bem(denied)).toBe("BEM-025");

    const bad = await fails(c.messages.create({ model, max_tokens: 8, messages: [] }));
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bem(bad)).toBe("BEM-011");

    const orphan = await fails(
      c.messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_none", content: "?" }] }] }),
    );
    expect(orphan).toBeInstanceOf(BadRequestError);
    expect(bem(orphan)).toBe("BEM-096");

    const unknownBlock = await fails(c.messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: [{ type: "hologram", x: 1 } as never] }] }));
    expect(unknownBlock).toBeInstanceOf(BadRequestError);

    const tooLarge = await fails(c.messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: "x".repeat(17 * 1024 * 1024) }] }));
    expect(tooLarge).toBeInstanceOf(ContentTooLargeError);
    expect(bem(tooLarge)).toBe("BEM-013");

    const noModel = await fails(
      c.messages.create({
        model: "auto",
        max_tokens: 8,
        capabilities: ["teleportation"],
        messages: [{ role: "user", content: "x" }],
      } as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(noModel).toBeInstanceOf(UnprocessableEntityError);
    expect(bem(noModel)).toBe("BEM-041");

    fake().status(429, { retryAfter: 0 }).status(429, { retryAfter: 0 }).status(429, { retryAfter: 0 }).status(429, { retryAfter: 0 });
    const limited = await fails(c.messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: "x" }] }));
    expect(limited).toBeInstanceOf(RateLimitError);

    fake().status(500).status(500).status(500).status(500);
    const upstream = await fails(c.messages.create({ model, max_tokens: 8, messages: [{ role: "user", content: "x" }] }));
    expect(upstream).toBeInstanceOf(InternalServerError);
    expect(((upstream as APIError).error as { error: { type: string } }).error.type).toBe("api_error");
  });
});

describe("/v1/messages specifics", () => {
  it("more stop_sequences than OpenAI takes: the first 4 reach it and the warning names the rest; Anthropic gets them all", async () => {
    // OpenAI refuses a fifth stop sequence (400): a valid Messages request failed with 424 BEM-073.
    const stops = ["<1>", "<2>", "<3>", "<4>", "<5>", "<6>"];
    const oai = fakeOpenAI().reply("ok");
    const ant = fakeAnthropic().reply("ok");
    const ask = (model: string) =>
      client(tenant().adminKey)
        .messages.create({ model, max_tokens: 64, stop_sequences: stops, messages: [{ role: "user", content: "hi" }] })
        .withResponse();
    const res = await ask("gpt-4o-mini");
    expect(oai.last.body.stop).toEqual(stops.slice(0, 4));
    expect(res.response.headers.get("x-edgeweave-warnings")).toBe("not sent to gpt-4o-mini (openai): stop sequences after the first 4");
    await ask("claude-sonnet-4");
    expect(ant.last.body.stop_sequences).toEqual(stops);
  });

  it("anthropic-version and anthropic-beta reach an Anthropic upstream unchanged; an OpenAI one gets neither, and the warning says what was dropped", async () => {
    const ant = fakeAnthropic().reply("ok");
    const oai = fakeOpenAI().reply("ok");
    const headers = { "anthropic-beta": "interleaved-thinking-2025-05-14,some-future-beta-2099-01-01" };
    // top_k: a field this SDK version no longer types; clients still send it.
    const withTopK = (model: string) =>
      ({ model, max_tokens: 64, top_k: 5, messages: [{ role: "user", content: "hi" }] }) as Anthropic.MessageCreateParamsNonStreaming;
    await client(tenant().adminKey, headers).messages.create(withTopK("claude-sonnet-4"));
    expect(lastSent?.headers.get("anthropic-version")).toMatch(/^\d{4}-\d\d-\d\d$/);
    expect(ant.last.headers["anthropic-version"]).toBe(lastSent?.headers.get("anthropic-version"));
    expect(ant.last.headers["anthropic-beta"]).toBe(headers["anthropic-beta"]);
    expect(ant.last.body.top_k).toBe(5);
    const res = await client(tenant().adminKey, headers).messages.create(withTopK("gpt-4o-mini")).withResponse();
    expect(oai.last.headers["anthropic-beta"]).toBeUndefined();
    expect(oai.last.body.top_k).toBeUndefined();
    expect(res.response.headers.get("x-edgeweave-warnings")).toBe("not sent to gpt-4o-mini (openai): top_k, anthropic-beta");
  });

  it("thinking blocks and their signatures round-trip unchanged to Anthropic; cache_control stays where the client put it", async () => {
    const signature = "EqQBCkYIBxgCKkBz+/sig==";
    const up = fakeAnthropic()
      .respond(() =>
        Response.json({
          id: "msg_t1",
          type: "message",
          role: "assistant",
          model: "claude-sonnet-4-20250514",
          content: [
            { type: "thinking", thinking: "The user wants Oslo's weather.", signature },
            { type: "redacted_thinking", data: "ENCRYPTED" },
            { type: "tool_use", id: "toolu_th", name: "get_weather", input: { city: "Oslo" } },
          ],
          stop_reason: "tool_use",
          stop_sequence: null,
          usage: { input_tokens: 50, output_tokens: 20, cache_creation_input_tokens: 40, cache_read_input_tokens: 0 },
        }),
      )
      .reply("Rainy.");
    const c = client(tenant().adminKey);
    const system: Anthropic.TextBlockParam[] = [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } }];
    const ask: Anthropic.MessageParam = { role: "user", content: [{ type: "text", text: "Weather in Oslo?", cache_control: { type: "ephemeral" } }] };
    const thinking = { type: "enabled" as const, budget_tokens: 2048 };
    const first = await c.messages.create({ model: "claude-sonnet-4", max_tokens: 4096, thinking, system, tools: [weather], messages: [ask] });
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "redacted_thinking", "tool_use"]);
    expect(first.content[0]).toEqual({ type: "thinking", thinking: "The user wants Oslo's weather.", signature });
    // Cache usage passes through; input_tokens excludes the cached part, as Anthropic counts it.
    expect(first.usage).toMatchObject({ input_tokens: 50, cache_creation_input_tokens: 40, cache_read_input_tokens: 0 });
    await c.messages.create({
      model: "claude-sonnet-4",
      max_tokens: 4096,
      thinking,
      system,
      tools: [weather],
      messages: [
        ask,
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_th", content: "rain" }] },
      ],
    });
    const sent = up.calls[1]!.body;
    expect(sent.thinking).toEqual(thinking);
    expect(sent.system).toEqual(system);
    expect(sent.messages[0]).toEqual({ role: "user", content: [{ type: "text", text: "Weather in Oslo?", cache_control: { type: "ephemeral" } }] });
    expect(sent.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "The user wants Oslo's weather.", signature },
        { type: "redacted_thinking", data: "ENCRYPTED" },
        { type: "tool_use", id: "toolu_th", name: "get_weather", input: { city: "Oslo" } },
      ],
    });
  });

  it("documents: as sent to Anthropic; plain text to OpenAI; a PDF to OpenAI is refused coded (BEM-079), nothing stored", async () => {
    const ant = fakeAnthropic().reply("read it");
    const oai = fakeOpenAI().reply("read it");
    const textDoc = {
      type: "document" as const,
      source: { type: "text" as const, media_type: "text/plain" as const, data: "The sky is green." },
      title: "Notes",
    };
    const ask = (model: string, doc: Anthropic.DocumentBlockParam, thread?: string) =>
      client(tenant().adminKey).messages.create({
        model,
        max_tokens: 64,
        messages: [{ role: "user", content: [doc, { type: "text", text: "Summarise" }] }],
        ...(thread ? { thread_id: thread } : {}),
      } as Anthropic.MessageCreateParamsNonStreaming);
    await ask("claude-sonnet-4", textDoc);
    expect(ant.last.body.messages[0].content[0]).toEqual(textDoc);
    await ask("gpt-4o-mini", textDoc);
    expect(oai.last.body.messages[0].content).toBe("Notes\n\nThe sky is green.\nSummarise");
    const thread = uniqueThread("doc");
    const pdf = { type: "document" as const, source: { type: "base64" as const, media_type: "application/pdf" as const, data: "JVBERi0xLjQK" } };
    const refused = await ask("gpt-4o-mini", pdf, thread).then(
      () => expect.fail("expected a refusal"),
      (e: unknown) => e as APIError,
    );
    expect(refused.status).toBe(422);
    expect((refused.error as { error: { bem_code: string } }).error.bem_code).toBe("BEM-079");
    expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
  });

  it("GET /v1/models answers in Anthropic's list shape for Anthropic clients; models.retrieve takes an alias", async () => {
    const c = client(tenant().adminKey);
    const page = await c.models.list({ limit: 1000 });
    const ids = page.data.map((m) => m.id);
    expect(ids).toContain("claude-sonnet-4");
    expect(page.data[0]).toMatchObject({ type: "model", display_name: expect.any(String), created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect((await c.models.retrieve("claude-haiku-4-5-20251001")).id).toBe("claude-3-5-haiku");
    // Without anthropic-version: the OpenAI shape, as before.
    const openai = (await (await api("/v1/models", { key: tenant().adminKey })).json()) as { object: string };
    expect(openai.object).toBe("list");
  });

  it("Anthropic's model paging: a bad limit or an id the list does not hold is 400 invalid_request_error, never a 500 or the first page again", async () => {
    const c = client(tenant().adminKey);
    const pages: [string, Record<string, unknown>][] = [
      ["limit 0", { limit: 0 }],
      ["limit 1001", { limit: 1001 }],
      ["a limit that is no number", { limit: "many" }],
      ["an after_id the list does not hold", { after_id: "claude-nonesuch" }],
      ["a before_id the list does not hold", { before_id: "claude-nonesuch" }],
    ];
    for (const [what, query] of pages) {
      const refused = await c.models.list(query as Anthropic.ModelListParams).then(
        () => expect.fail(`expected a refusal for ${what}`),
        (e: unknown) => e as APIError,
      );
      expect(refused, what).toBeInstanceOf(BadRequestError);
      expect((refused.error as { error: { bem_code: string } }).error.bem_code, what).toBe("BEM-011");
    }
    // A real id pages on from it.
    const all = (await c.models.list({ limit: 1000 })).data.map((m) => m.id);
    expect((await c.models.list({ after_id: all[0]!, limit: 1 })).data.map((m) => m.id)).toEqual([all[1]]);
    // has_more looks the way the page goes: before_id pages back, and nothing is before the list's start.
    const back = await c.models.list({ before_id: all[2]!, limit: 2 });
    expect(back.data.map((m) => m.id)).toEqual([all[0], all[1]]);
    expect(back.has_more).toBe(false);
    expect((await c.models.list({ before_id: all[3]!, limit: 2 })).has_more).toBe(true);
    expect((await c.models.list({ after_id: all.at(-3)!, limit: 2 })).has_more).toBe(false);
  });
});

describe("assistant turns as Anthropic wrote them: block order, a tool_use breakpoint, server-tool blocks", () => {
  const ask: Anthropic.MessageParam = { role: "user", content: "Weather in Oslo?" };
  /** Text after a tool_use, and a cache breakpoint on the tool_use. */
  const interleaved: Anthropic.MessageParam = {
    role: "assistant",
    content: [
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "toolu_il1", name: "get_weather", input: { city: "Oslo" }, cache_control: { type: "ephemeral" } },
      { type: "text", text: "One moment." },
    ],
  };
  const result: Anthropic.MessageParam = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_il1", content: "rain" }] };
  /** A turn that used Anthropic's web search (server_tool_use, then its results), then answered. */
  const searched: Anthropic.MessageParam = {
    role: "assistant",
    content: [
      { type: "text", text: "Searching." },
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "Oslo weather" } },
      {
        type: "web_search_tool_result",
        tool_use_id: "srvtoolu_1",
        content: [{ type: "web_search_result", url: "https://example.com/oslo", title: "Oslo", encrypted_content: "EncR3sult", page_age: null }],
      },
      { type: "text", text: "It rains in Oslo." },
    ],
  };
  const blocks = (m: { content: unknown }) => m.content as { type: string }[];

  it("text after a tool_use and the tool_use's breakpoint reach Anthropic as sent, and replay from the thread in that order", async () => {
    const up = fakeAnthropic().reply("Rainy.").reply("Dry tomorrow.");
    const c = client(tenant().adminKey);
    const thread = uniqueThread("order");
    await c.messages.create({ model: "claude-sonnet-4", max_tokens: 256, tools: [weather], messages: [ask, interleaved, result], thread_id: thread } as never);
    expect(up.calls[0]!.body.messages[1]).toEqual(interleaved);
    // The thread keeps the order: the next turn (only its new message sent) replays the turn so.
    await c.messages.create({
      model: "claude-sonnet-4",
      max_tokens: 256,
      tools: [weather],
      messages: [{ role: "user", content: "And tomorrow?" }],
      thread_id: thread,
    } as never);
    const replayed = up.calls[1]!.body.messages[1] as { role: string; content: Record<string, unknown>[] };
    expect(replayed.role).toBe("assistant");
    expect(replayed.content.map(({ cache_control: _, ...b }) => b)).toEqual(
      blocks(interleaved).map(({ cache_control: _, ...b }: Record<string, unknown>) => b),
    );
  });

  it("an OpenAI-format upstream gets the text and the call (their order is not expressible there), and the warning names the breakpoint", async () => {
    const oai = fakeOpenAI().reply("Rainy.");
    const res = await client(tenant().adminKey)
      .messages.create({ model: "gpt-4o-mini", max_tokens: 256, tools: [weather], messages: [ask, interleaved, result] })
      .withResponse();
    const sent = wireMessages(oai.last.body) as { role: string; content: unknown; tool_calls?: { id: string }[] }[];
    expect(sent[1]).toMatchObject({ role: "assistant", content: "Let me check.\nOne moment.", tool_calls: [{ id: "toolu_il1" }] });
    expect(res.response.headers.get("x-edgeweave-warnings")).toContain("cache_control");
  });

  it("server-tool blocks go to Anthropic unchanged, in order, and replay from the thread so", async () => {
    const up = fakeAnthropic().reply("You're welcome.").reply("Still raining.");
    const c = client(tenant().adminKey);
    const thread = uniqueThread("srv");
    const tools = [{ type: "web_search_20250305", name: "web_search", max_uses: 1 }] as never;
    await c.messages.create({
      model: "claude-sonnet-4",
      max_tokens: 256,
      tools,
      messages: [ask, searched, { role: "user", content: "Thanks!" }],
      thread_id: thread,
    } as never);
    expect(up.calls[0]!.body.messages[1]).toEqual(searched);
    await c.messages.create({ model: "claude-sonnet-4", max_tokens: 256, tools, messages: [{ role: "user", content: "Now?" }], thread_id: thread } as never);
    expect(up.calls[1]!.body.messages[1]).toEqual(searched);
  });

  it("to an OpenAI-format upstream the server-tool blocks are left out and the warning says so; the turn runs", async () => {
    const oai = fakeOpenAI().reply("You're welcome.");
    const res = await client(tenant().adminKey)
      .messages.create({ model: "gpt-4o-mini", max_tokens: 256, messages: [ask, searched, { role: "user", content: "Thanks!" }] })
      .withResponse();
    expect(res.data.content).toEqual([{ type: "text", text: "You're welcome." }]);
    const sent = wireMessages(oai.last.body) as { role: string; content: unknown }[];
    expect(sent[1]).toMatchObject({ role: "assistant", content: "Searching.\nIt rains in Oslo." });
    expect(JSON.stringify(oai.last.body)).not.toContain("srvtoolu_1");
    expect(res.response.headers.get("x-edgeweave-warnings")).toBe("not sent to gpt-4o-mini (openai): server tool blocks");
  });

  it("a block type new to us is kept in an assistant turn only: a user's is a 400, a type that is no plain name is a 400, a malformed known block keeps its own error, and its size counts against the body limit", async () => {
    const post = async (messages: unknown[]) => {
      const res = await api("/v1/messages", {
        key: tenant().adminKey,
        headers: { "anthropic-version": "2023-06-01" },
        body: { model: "claude-sonnet-4", max_tokens: 8, messages },
      });
      return { status: res.status, text: await res.text() };
    };
    const user = await post([{ role: "user", content: [{ type: "telepathy_tool_use", id: "x" }] }]);
    expect(user.status, user.text).toBe(400);
    expect(user.text).toContain("BEM-011");
    expect(user.text).toContain("server_tool_use");
    const notAName = await post([ask, { role: "assistant", content: [{ type: "Telepathy Tool", id: "x" }] }, { role: "user", content: "?" }]);
    expect(notAName.status, notAName.text).toBe(400);
    expect(notAName.text).toContain("BEM-011");
    expect(notAName.text).toContain("messages.1.content.0.type: Invalid block type");
    const toolUse = await post([ask, { role: "assistant", content: [{ type: "tool_use" }] }, { role: "user", content: "?" }]);
    expect(toolUse.status, toolUse.text).toBe(400);
    expect(toolUse.text).toContain("messages.1.content.0.id: Invalid input: expected string, received undefined");
    const text = await post([ask, { role: "assistant", content: [{ type: "text" }] }, { role: "user", content: "?" }]);
    expect(text.status, text.text).toBe(400);
    expect(JSON.parse(text.text).error.message).toContain("messages.1.content.0.text: Invalid input: expected string, received undefined");
    const huge = await post([
      ask,
      { role: "assistant", content: [{ type: "telepathy_tool_result", data: "x".repeat(17 * 1024 * 1024) }] },
      { role: "user", content: "?" },
    ]);
    expect(huge.status, huge.text.slice(0, 200)).toBe(413);
    expect(huge.text).toContain("BEM-013");
  });
});

describe("an Anthropic upstream's reply reaches the client, and the thread, as the model said it", () => {
  const cite = {
    type: "web_search_result_location",
    url: "https://example.com/oslo",
    title: "Oslo",
    encrypted_index: "EncIdx1",
    cited_text: "Rain all week in Oslo.",
  };
  /** A web search reply: text, the search and its results, then text with citations and without. */
  const searched = [
    { type: "text", text: "Let me search." },
    { type: "server_tool_use", id: "srvtoolu_r1", name: "web_search", input: { query: "Oslo weather" } },
    {
      type: "web_search_tool_result",
      tool_use_id: "srvtoolu_r1",
      content: [{ type: "web_search_result", url: "https://example.com/oslo", title: "Oslo", encrypted_content: "EncR3sult", page_age: "2 days" }],
    },
    { type: "text", text: "It rains in Oslo.", citations: [cite] },
    { type: "text", text: " Take an umbrella." },
  ];
  /** Thinking, text, a tool_use, then text after it. */
  const interleaved = [
    { type: "thinking", thinking: "The user wants weather.", signature: "SiGn4tur3" },
    { type: "text", text: "I'll check." },
    { type: "tool_use", id: "toolu_r2", name: "get_weather", input: { city: "Oslo" } },
    { type: "text", text: "One moment." },
  ];
  const tools = [weather, { type: "web_search_20250305", name: "web_search", max_uses: 1 }] as never;
  const ask = (content: string) => ({ model: "claude-sonnet-4", max_tokens: 256, tools, messages: [{ role: "user" as const, content }] });

  it("messages.create: a web search reply's blocks, in order, citations and usage.server_tool_use included", async () => {
    fakeAnthropic().reply({ blocks: searched, serverToolUse: { web_search_requests: 1 } });
    const msg = await client(tenant().adminKey).messages.create(ask("Weather in Oslo?"));
    expect(msg.content).toEqual(searched);
    expect(msg.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    expect(msg.stop_reason).toBe("end_turn");
  });

  it("messages.stream(): Anthropic's event sequence for those blocks, and finalMessage() is the reply", async () => {
    fakeAnthropic().reply({ blocks: searched, serverToolUse: { web_search_requests: 1 } });
    const stream = client(tenant().adminKey).messages.stream(ask("Weather in Oslo?"));
    const events: string[] = [];
    stream.on("streamEvent", (e) => {
      if (e.type === "content_block_start") events.push(`start ${e.index} ${e.content_block.type}`);
      else if (e.type === "content_block_delta") events.push(`delta ${e.index} ${e.delta.type}`);
      else if (e.type === "content_block_stop") events.push(`stop ${e.index}`);
    });
    const final = await stream.finalMessage();
    expect(JSON.parse(JSON.stringify(final.content))).toEqual(searched);
    expect(final.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    expect([...new Set(events)]).toEqual([
      "start 0 text",
      "delta 0 text_delta",
      "stop 0",
      "start 1 server_tool_use",
      "delta 1 input_json_delta",
      "stop 1",
      "start 2 web_search_tool_result",
      "stop 2",
      "start 3 text",
      "delta 3 citations_delta",
      "delta 3 text_delta",
      "stop 3",
      "start 4 text",
      "delta 4 text_delta",
      "stop 4",
    ]);
  });

  it.each([false, true])("thinking, text, a tool_use and text after it keep their order, to the client and in the thread (streamed: %s)", async (streamed) => {
    const up = fakeAnthropic().reply({ blocks: interleaved }).reply("Rain.");
    const c = client(tenant().adminKey);
    const thread = uniqueThread("il");
    const first = { ...ask("Weather?"), thread_id: thread } as never;
    const msg = streamed ? await c.messages.stream(first).finalMessage() : await c.messages.create(first);
    expect(JSON.parse(JSON.stringify(msg.content))).toEqual(interleaved);
    expect(msg.stop_reason).toBe("tool_use");
    const result = [{ type: "tool_result" as const, tool_use_id: "toolu_r2", content: "rain" }];
    await c.messages.create({ ...ask("x"), messages: [{ role: "user", content: result }], thread_id: thread } as never);
    expect(up.calls[1]!.body.messages[1]).toEqual({ role: "assistant", content: interleaved });
  });

  it("a block type new to us is passed to the client as it came, not dropped", async () => {
    const novel = [
      { type: "text", text: "Done." },
      { type: "future_tool_result", tool_use_id: "srvtoolu_x", content: { anything: [1, 2] } },
    ];
    fakeAnthropic().reply({ blocks: novel }).reply({ blocks: novel });
    const c = client(tenant().adminKey);
    expect((await c.messages.create(ask("Go"))).content).toEqual(novel);
    expect(JSON.parse(JSON.stringify((await c.messages.stream(ask("Go")).finalMessage()).content))).toEqual(novel);
  });

  it.each([false, true])(
    "a stateful thread stores the reply as said: the next turn replays its blocks in order (first turn streamed: %s)",
    async (streamed) => {
      const up = fakeAnthropic().reply({ blocks: searched }).reply({ blocks: interleaved }).reply("Dry tomorrow.");
      const c = client(tenant().adminKey);
      const thread = uniqueThread("reply");
      const turn = (content: string) => ({ ...ask(content), thread_id: thread }) as never;
      if (streamed) await c.messages.stream(turn("Weather in Oslo?")).finalMessage();
      else await c.messages.create(turn("Weather in Oslo?"));
      const second = await c.messages.create(turn("And the tool?"));
      expect(second.content).toEqual(interleaved);
      await c.messages.create({
        ...ask("Thanks"),
        thread_id: thread,
        messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_r2", content: "rain" }] }],
      } as never);
      const sent = up.calls[2]!.body.messages as { role: string; content: unknown }[];
      expect(sent[1]).toEqual({ role: "assistant", content: searched });
      expect(sent[3]).toEqual({ role: "assistant", content: interleaved });
    },
  );

  it.each([false, true])("a client resending the history with the reply as it got it matches the stored turn (first turn streamed: %s)", async (streamed) => {
    const up = fakeAnthropic().reply({ blocks: searched }).reply("You're welcome.");
    const c = client(tenant().adminKey);
    const thread = uniqueThread("resend");
    const first = { ...ask("Weather in Oslo?"), thread_id: thread } as never;
    const got = streamed ? await c.messages.stream(first).finalMessage() : await c.messages.create(first);
    const history: Anthropic.MessageParam[] = [
      { role: "user", content: "Weather in Oslo?" },
      { role: "assistant", content: JSON.parse(JSON.stringify(got.content)) },
      { role: "user", content: "Thanks!" },
    ];
    const res = await c.messages.create({ ...ask("x"), messages: history, thread_id: thread } as never);
    expect((res as unknown as { edgeweave: { reconciled: unknown } }).edgeweave.reconciled).toMatchObject({ matched: 2, appended: 1, branched_from: null });
    const sent = up.calls[1]!.body.messages as { role: string; content: unknown }[];
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(sent[1]).toEqual({ role: "assistant", content: searched });
  });

  /** A reply with a block type new to us between two texts, as a stateless client (Claude Code) resends it. */
  const novel = [
    { type: "text", text: "Looked it up." },
    { type: "telepathy_tool_result", tool_use_id: "srvtoolu_t1", content: { minds: [{ id: 1, thought: "rain" }] } },
    { type: "text", text: "It rains." },
  ];
  /** The history a stateless client sends next: its question, the reply as it got it, its next words. */
  const resent = (got: { content: unknown }): Anthropic.MessageParam[] => [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: JSON.parse(JSON.stringify(got.content)) },
    { role: "user", content: "Thanks!" },
  ];
  it.each([false, true])(
    "a stateless client resending a reply's block of a type new to us gets its next turn; Anthropic gets the block unchanged, in order (first turn streamed: %s)",
    async (streamed) => {
      const up = fakeAnthropic().reply({ blocks: novel }).reply("You're welcome.");
      const c = client(tenant().adminKey);
      const got = streamed ? await c.messages.stream(ask("Weather?")).finalMessage() : await c.messages.create(ask("Weather?"));
      expect(JSON.parse(JSON.stringify(got.content))).toEqual(novel);
      const history = resent(got);
      const second = await c.messages.create({ ...ask("x"), messages: history });
      expect(second.content).toEqual([{ type: "text", text: "You're welcome." }]);
      const sent = up.calls[1]!.body.messages as { role: string; content: unknown }[];
      expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(sent[1]).toEqual({ role: "assistant", content: novel });
    },
  );

  it("in a thread, such a block resent by the client is the stored reply's own (the same part), and the next turn replays it unchanged", async () => {
    const up = fakeAnthropic().reply({ blocks: novel }).reply("You're welcome.").reply("Still raining.");
    const c = client(tenant().adminKey);
    const thread = uniqueThread("novel");
    const got = await c.messages.create({ ...ask("Weather?"), thread_id: thread } as never);
    const history = resent(got);
    const res = await c.messages.create({ ...ask("x"), messages: history, thread_id: thread } as never);
    expect((res as unknown as { edgeweave: { reconciled: unknown } }).edgeweave.reconciled).toMatchObject({ matched: 2, appended: 1, branched_from: null });
    await c.messages.create({ ...ask("And tomorrow?"), thread_id: thread } as never);
    expect((up.calls[2]!.body.messages as unknown[])[1]).toEqual({ role: "assistant", content: novel });
  });

  it("in a thread, such a block a client wrote itself is a 400 before anything is stored: a key that reaches a shared thread cannot plant one for Anthropic to refuse on every later turn", async () => {
    const up = fakeAnthropic().reply("Sunny.").reply("Still sunny.");
    const c = client(tenant().adminKey);
    const thread = uniqueThread("mine");
    await c.messages.create({ ...ask("Weather?"), thread_id: thread } as never);
    const planted = { role: "assistant", content: [{ type: "telepathy_tool_result", tool_use_id: "srvtoolu_z", content: "planted" }] };
    const post = (messages: unknown[], threadId?: string) =>
      api("/v1/messages", {
        key: tenant().memberKey,
        headers: { "anthropic-version": "2023-06-01" },
        body: { model: "claude-sonnet-4", max_tokens: 8, messages, ...(threadId ? { thread_id: threadId } : {}) },
      });
    const history = [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: [{ type: "text", text: "Sunny." }] },
      planted,
      { role: "user", content: "?" },
    ];
    const res = await post(history, thread);
    const body = await res.text();
    expect(res.status, body).toBe(400);
    expect(body).toContain("BEM-011");
    expect(body).toContain("telepathy_tool_result");
    // A new thread whose first request carries one: refused alike, and no thread is made.
    const fresh = uniqueThread("mine");
    expect((await post([{ role: "user", content: "hi" }, planted, { role: "user", content: "?" }], fresh)).status).toBe(400);
    expect((await api(`/v1/threads/${fresh}/state`, { key: tenant().adminKey })).status).toBe(404);
    // Nothing reached Anthropic, and the thread's next turn replays only what it holds.
    expect(up.calls).toHaveLength(1);
    await c.messages.create({ ...ask("And now?"), thread_id: thread } as never);
    expect(JSON.stringify(up.calls[1]!.body.messages)).not.toContain("telepathy");
  });

  it("to an OpenAI-format upstream a block of a type new to us is left out and named in the warnings; the turn runs", async () => {
    const oai = fakeOpenAI().reply("You're welcome.");
    const res = await client(tenant().adminKey)
      .messages.create({
        model: "gpt-4o-mini",
        max_tokens: 256,
        messages: [
          { role: "user", content: "Weather?" },
          { role: "assistant", content: novel as never },
          { role: "user", content: "Thanks!" },
        ],
      })
      .withResponse();
    expect(res.data.content).toEqual([{ type: "text", text: "You're welcome." }]);
    const sent = wireMessages(oai.last.body) as { role: string; content: unknown }[];
    expect(sent[1]).toMatchObject({ role: "assistant", content: "Looked it up.\nIt rains." });
    expect(JSON.stringify(oai.last.body)).not.toContain("srvtoolu_t1");
    const warning = "not sent to gpt-4o-mini (openai): telepathy_tool_result blocks";
    expect(res.response.headers.get("x-edgeweave-warnings")).toBe(warning);
    expect((res.data as unknown as { edgeweave: { warnings: string[] } }).edgeweave.warnings).toContain(warning);
  });

  it("an OpenAI-format client gets the text and the calls, and the warnings name what its format leaves out", async () => {
    fakeAnthropic().reply({ blocks: searched }).reply({ blocks: interleaved });
    const key = tenant().adminKey;
    const chat = await api("/v1/chat/completions", { key, body: { model: "claude-sonnet-4", messages: [{ role: "user", content: "Weather in Oslo?" }] } });
    const body = (await chat.json()) as { choices: { message: { content: string } }[]; edgeweave: { warnings: string[] } };
    expect(body.choices[0]!.message.content).toBe("Let me search.It rains in Oslo. Take an umbrella.");
    expect(body.edgeweave.warnings).toContain("not in this format, kept in the thread: the reply's server_tool_use, web_search_tool_result, citations");
    const fn = { type: "function", function: { name: weather.name, parameters: weather.input_schema } };
    const again = await api("/v1/chat/completions", {
      key,
      body: { model: "claude-sonnet-4", tools: [fn], messages: [{ role: "user", content: "Weather?" }] },
    });
    const calls = (await again.json()) as { choices: { message: { content: string; tool_calls: { id: string }[] } }[]; edgeweave: { warnings: string[] } };
    expect(calls.choices[0]!.message).toMatchObject({ content: "I'll check.One moment.", tool_calls: [{ id: "toolu_r2" }] });
    expect(calls.edgeweave.warnings.join()).not.toContain("not in this format");
    // Responses: the same text as its output_text, the same warning.
    fakeAnthropic().reply({ blocks: searched });
    const resp = await api("/v1/responses", { key, body: { model: "claude-sonnet-4", input: "Weather in Oslo?" } });
    const r = (await resp.json()) as { output_text?: string; output: { type: string; content?: { text: string }[] }[]; edgeweave: { warnings: string[] } };
    expect(resp.status).toBe(200);
    expect(r.output.find((o) => o.type === "message")?.content?.[0]?.text).toBe("Let me search.It rains in Oslo. Take an umbrella.");
    expect(r.edgeweave.warnings).toContain("not in this format, kept in the thread: the reply's server_tool_use, web_search_tool_result, citations");
  });
});
