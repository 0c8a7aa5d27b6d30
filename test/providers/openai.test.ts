import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { callModel, streamModel } from "../../src/providers/call";
import { FailoverError, runWithFailover } from "../../src/providers/failover";
import { ProviderError } from "../../src/providers/provider-error";
import { collectStream } from "../support/collect-stream";
import type { ChatRequest } from "../../src/providers/types";
import { fakeOpenAI } from "../support/fake-openai";
import { clearUpstream, expectUnmockedRequests, unmockedRequests } from "../support/upstream";
import { drain, failure, model } from "./helpers";

afterEach(() => clearUpstream());

const hello: ChatRequest = {
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
  ],
};
const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

describe("OpenAI Chat Completions adapter", () => {
  it("sends the exact request: URL, bearer key, body with the upstream model id", async () => {
    const fake = fakeOpenAI().reply("Hello!");
    const m = model("gpt", "openai", { model: "gpt-4o-mini" });
    await callModel(m, { ...hello, temperature: 0.2, max_output_tokens: 50, stop: ["\n\n"], user: "u-1" }, { env });
    expect(fake.calls).toHaveLength(1);
    const call = fake.last;
    expect(call.url).toBe("https://api.openai.com/v1/chat/completions");
    expect(call.method).toBe("POST");
    expect(call.headers.authorization).toBe("Bearer sk-test-openai");
    expect(call.headers["content-type"]).toBe("application/json");
    expect(call.body).toEqual({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
      temperature: 0.2,
      max_completion_tokens: 50,
      stop: ["\n\n"],
      user: "u-1",
    });
  });

  it("parses a real-shaped JSON reply with usage", async () => {
    fakeOpenAI().reply({ text: "Hello there", usage: { prompt_tokens: 21, completion_tokens: 3 }, model: "gpt-4o-mini-2024-07-18" });
    const result = await callModel(model("gpt", "openai", { model: "gpt-4o-mini" }), hello, { env });
    expect(result).toEqual({
      message: { role: "assistant", content: "Hello there" },
      finish_reason: "stop",
      usage: { prompt_tokens: 21, completion_tokens: 3 },
      upstream_model: "gpt-4o-mini-2024-07-18",
    });
  });

  it("leaves usage undefined when the provider reports none", async () => {
    fakeOpenAI().reply({ text: "x", usage: null });
    const result = await callModel(model("gpt", "openai"), hello, { env });
    expect(result.usage).toBeUndefined();
  });

  it("groq, nvidia and custom share the adapter with their own base URL, key and max_tokens", async () => {
    const groq = fakeOpenAI("https://api.groq.com", "/openai/v1").reply("g");
    const nim = fakeOpenAI("https://integrate.api.nvidia.com", "/v1").reply("n");
    const vllm = fakeOpenAI("http://vllm.internal:8000", "/v1").reply("v");
    await callModel(model("llama", "groq", { model: "llama-3.3-70b-versatile" }), { ...hello, max_output_tokens: 9 }, { env });
    await callModel(model("nim", "nvidia", { model: "meta/llama-3.1-8b-instruct" }), hello, { env });
    await callModel(
      model("local", "custom", { base_url: "http://vllm.internal:8000/v1/" }),
      {
        messages: [
          { role: "developer", content: "d" },
          { role: "user", content: "u" },
        ],
      },
      { env },
    );
    expect(groq.last.url).toBe("https://api.groq.com/openai/v1/chat/completions");
    expect(groq.last.headers.authorization).toBe("Bearer gsk-test");
    expect(groq.last.body.max_tokens).toBe(9);
    expect(groq.last.body.max_completion_tokens).toBeUndefined();
    expect(nim.last.url).toBe("https://integrate.api.nvidia.com/v1/chat/completions");
    expect(nim.last.headers.authorization).toBe("Bearer nvapi-test");
    expect(vllm.last.url).toBe("http://vllm.internal:8000/v1/chat/completions");
    expect(vllm.last.headers.authorization).toBeUndefined();
    // Compatible servers do not know OpenAI's "developer" role.
    expect(vllm.last.body.messages[0]).toEqual({ role: "system", content: "d" });
    expect(vllm.last.body.model).toBe("local");
  });

  it("passes tools, tool_choice, response_format, images and tool messages through unchanged", async () => {
    const fake = fakeOpenAI().reply({ tool_calls: [{ id: "call_1", name: "get_weather", arguments: { city: "Paris" } }] });
    const req: ChatRequest = {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: "https://x.test/cat.png" } },
          ],
        },
        { role: "assistant", content: null, tool_calls: [{ id: "call_0", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
        { role: "tool", tool_call_id: "call_0", content: "rain" },
      ],
      tools: [weatherTool],
      tool_choice: "auto",
      response_format: { type: "json_object" },
    };
    const result = await callModel(model("gpt", "openai"), req, { env });
    expect(fake.last.body.messages).toEqual(req.messages);
    expect(fake.last.body.tools).toEqual([weatherTool]);
    expect(fake.last.body.tool_choice).toBe("auto");
    expect(fake.last.body.response_format).toEqual({ type: "json_object" });
    expect(result.finish_reason).toBe("tool_calls");
    expect(result.message).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
    });
  });

  it("streams: asks for usage, yields deltas then one done with usage", async () => {
    const fake = fakeOpenAI().reply({ text: "Hello world", chunks: ["Hel", "lo ", "world"], usage: { prompt_tokens: 8, completion_tokens: 2 } });
    const events = await drain(streamModel(model("gpt", "openai", { model: "gpt-4o" }), hello, { env }));
    expect(fake.last.body.stream).toBe(true);
    expect(fake.last.body.stream_options).toEqual({ include_usage: true });
    expect(events).toEqual([
      { type: "delta", content: "Hel" },
      { type: "delta", content: "lo " },
      { type: "delta", content: "world" },
      { type: "done", finish_reason: "stop", usage: { prompt_tokens: 8, completion_tokens: 2 }, upstream_model: "gpt-4o" },
    ]);
  });

  it("streams tool calls as indexed fragments that add up to the call", async () => {
    fakeOpenAI().reply({
      tool_calls: [
        { id: "call_a", name: "get_weather", arguments: { city: "Lima" } },
        { id: "call_b", name: "get_time", arguments: {} },
      ],
    });
    const result = await collectStream(streamModel(model("gpt", "openai"), { ...hello, tools: [weatherTool] }, { env }), "gpt");
    expect(result.finish_reason).toBe("tool_calls");
    expect(result.message.content).toBeNull();
    expect(result.message.tool_calls).toEqual([
      { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Lima"}' } },
      { id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } },
    ]);
  });

  it("a stream without [DONE] is an error (BEM-074), never a clean finish", async () => {
    fakeOpenAI().cut("Half a rep");
    const seen: unknown[] = [];
    const err = await failure(
      (async () => {
        for await (const ev of streamModel(model("gpt", "openai"), hello, { env })) seen.push(ev);
      })(),
    );
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.some((e) => (e as { type: string }).type === "done")).toBe(false);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).code).toBe("BEM-074");
  });

  it("a truncated JSON body is a retryable upstream error", async () => {
    fakeOpenAI().cut("Hello there, this is long enough to cut");
    const err = await failure(callModel(model("gpt", "openai"), hello, { env }));
    expect(err).toMatchObject({ code: "BEM-071", disposition: "retry" });
  });

  it("missing key → BEM-070 naming the secret, before any request", async () => {
    const fake = fakeOpenAI();
    const err = await failure(callModel(model("gpt", "openai", { api_key_env: "MY_OPENAI_KEY" }), hello, { env: { OPENAI_API_KEY: "sk-other" } }));
    expect(err).toMatchObject({ code: "BEM-070", status: 424 });
    expect((err as Error).message).toContain("MY_OPENAI_KEY");
    expect((err as Error).message).not.toContain("sk-other");
    expect(fake.calls).toHaveLength(0);
  });

  it("401 upstream → BEM-073 (424) naming model and status, never the key or the body", async () => {
    fakeOpenAI().status(401, {
      body: { error: { message: "Incorrect API key provided: sk-test-openai", type: "invalid_request_error", code: "invalid_api_key" } },
    });
    const err = await failure(callModel(model("gpt", "openai"), hello, { env }));
    expect(err).toBeInstanceOf(ProviderError);
    const e = err as ProviderError;
    expect([e.code, e.status, e.upstreamStatus, e.disposition]).toEqual(["BEM-073", 424, 401, "fatal"]);
    expect(e.message).toBe("Model 'gpt': upstream rejected the request (HTTP 401)");
    expect(JSON.stringify(e.toJSON())).not.toContain("sk-test-openai");
    // The log-only detail keeps the body but with the key redacted.
    expect(e.internal).toContain("Incorrect API key");
    expect(e.internal).not.toContain("sk-test-openai");
  });

  it("429 carries the retry-after it was given; 5xx is retryable", async () => {
    fakeOpenAI().status(429, { retryAfter: "3" }).status(503);
    const rate = await failure(callModel(model("gpt", "openai"), hello, { env }));
    expect(rate).toMatchObject({ code: "BEM-078", upstreamStatus: 429, retryAfterMs: 3000, disposition: "retry" });
    const down = await failure(callModel(model("gpt", "openai"), hello, { env }));
    expect(down).toMatchObject({ code: "BEM-071", upstreamStatus: 503, disposition: "retry" });
  });

  it("a connection error is retryable BEM-071", async () => {
    // No fake for this host: the harness refuses the connection.
    expectUnmockedRequests();
    const err = await failure(callModel(model("x", "custom", { base_url: "http://nowhere.test/v1" }), hello, { env }));
    expect(err).toMatchObject({ code: "BEM-071", disposition: "retry" });
    expect(unmockedRequests()).toEqual(["POST http://nowhere.test/v1/chat/completions"]);
  });

  it("a hung upstream times out after provider_config.timeout_ms → BEM-072", async () => {
    fakeOpenAI().hang();
    const started = Date.now();
    const err = await failure(callModel(model("gpt", "openai", { timeout_ms: 50 }), hello, { env }));
    expect(err).toMatchObject({ code: "BEM-072", status: 504, disposition: "failover" });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a stream that stalls after its first event times out → BEM-072", async () => {
    fakeOpenAI().cut("Hello", { stall: true });
    const seen: unknown[] = [];
    const err = await failure(
      (async () => {
        for await (const ev of streamModel(model("gpt", "openai", { timeout_ms: 50 }), hello, { env })) seen.push(ev);
      })(),
    );
    expect(seen).toEqual([
      { type: "delta", content: "Hel" },
      { type: "delta", content: "lo" },
    ]);
    expect(err).toMatchObject({ code: "BEM-072" });
  });

  it("the caller's abort is not turned into a provider failure", async () => {
    fakeOpenAI().hang();
    const ctl = new AbortController();
    const p = failure(callModel(model("gpt", "openai"), hello, { env, signal: ctl.signal }));
    ctl.abort(new Error("client went away"));
    const err = await p;
    expect(err).not.toBeInstanceOf(ProviderError);
    expect((err as Error).message).toBe("client went away");
    // …and failover does not try another model after it.
    const fake2 = fakeOpenAI("https://api.groq.com", "/openai/v1").reply("never");
    const ctl2 = new AbortController();
    ctl2.abort(new Error("gone"));
    const err2 = await failure(runWithFailover([model("gpt", "openai"), model("g", "groq")], (m) => callModel(m, hello, { env, signal: ctl2.signal })));
    expect(err2).not.toBeInstanceOf(FailoverError);
    expect(fake2.calls).toHaveLength(0);
  });
});
