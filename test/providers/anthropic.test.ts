import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { anthropicAdapter } from "../../src/providers/anthropic";
import { callModel, streamModel } from "../../src/providers/call";
import { ProviderError } from "../../src/providers/provider-error";
import { collectStream } from "../support/collect-stream";
import type { Target } from "../../src/providers/adapter";
import type { ChatRequest } from "../../src/providers/types";
import { fakeAnthropic } from "../support/fake-anthropic";
import { clearUpstream } from "../support/upstream";
import { bytes, drain, failure, model, portable } from "./helpers";

afterEach(() => clearUpstream());

const claude = model("claude", "anthropic", { model: "claude-sonnet-4-5" });
const target: Target = { name: "claude", provider: "anthropic", upstreamModel: "claude-sonnet-4-5", baseUrl: "https://api.anthropic.com/v1", apiKey: "k" };
const weatherTool = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } } },
};

describe("Anthropic Messages adapter", () => {
  it("sends the exact request: /v1/messages, x-api-key, anthropic-version, system split out, default max_tokens", async () => {
    const fake = fakeAnthropic().reply("Hi!");
    await callModel(
      claude,
      {
        messages: [
          { role: "system", content: "Be brief." },
          { role: "system", content: "[style system] Short." },
          { role: "user", content: "Hi" },
        ],
      },
      { env },
    );
    const call = fake.last;
    expect(call.url).toBe("https://api.anthropic.com/v1/messages");
    expect(call.headers["x-api-key"]).toBe("sk-ant-test");
    expect(call.headers["anthropic-version"]).toBe("2023-06-01");
    expect(call.headers["content-type"]).toBe("application/json");
    expect(call.headers.authorization).toBeUndefined();
    expect(call.body).toEqual({
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      system: "Be brief.\n\n[style system] Short.",
      messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
    });
  });

  it("maps content blocks: base64 and URL images, merged same-role turns, stop and user", () => {
    const req: ChatRequest = {
      messages: [
        { role: "user", content: "First" },
        {
          role: "user",
          content: [
            { type: "text", text: "Look:" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
        { role: "assistant", content: "A cat." },
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url: "https://img.test/dog.jpg" } },
            { type: "text", text: "" },
          ],
        },
      ],
      max_output_tokens: 100,
      temperature: 0.5,
      stop: "END",
      user: "user-7",
    };
    const wire = anthropicAdapter.buildRequest(target, req, true);
    expect(wire.body).toEqual({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "First" },
            { type: "text", text: "Look:" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: "A cat." }] },
        { role: "user", content: [{ type: "image", source: { type: "url", url: "https://img.test/dog.jpg" } }] },
      ],
      temperature: 0.5,
      stop_sequences: ["END"],
      metadata: { user_id: "user-7" },
      stream: true,
    });
  });

  it("maps OpenAI tool calls and tool messages to tool_use / tool_result, and tools to input_schema", () => {
    const req: ChatRequest = {
      messages: [
        { role: "user", content: "Weather in Oslo and Rome?" },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [
            { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
            { id: "toolu_2", type: "function", function: { name: "get_weather", arguments: "" } },
          ],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "rain" },
        { role: "tool", tool_call_id: "toolu_2", content: [{ type: "text", text: "sun" }] },
        { role: "user", content: "Thanks" },
      ],
      tools: [weatherTool],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
    };
    const body = anthropicAdapter.buildRequest(target, req, false).body;
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Oslo and Rome?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } },
          { type: "tool_use", id: "toolu_2", name: "get_weather", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "rain" },
          { type: "tool_result", tool_use_id: "toolu_2", content: "sun" },
          { type: "text", text: "Thanks" },
        ],
      },
    ]);
    expect(body.tools).toEqual([{ name: "get_weather", description: "Weather for a city", input_schema: weatherTool.function.parameters }]);
    expect(body.tool_choice).toEqual({ type: "tool", name: "get_weather", disable_parallel_tool_use: true });
    expect(anthropicAdapter.buildRequest(target, { ...req, tool_choice: "required", parallel_tool_calls: undefined }, false).body.tool_choice).toEqual({
      type: "any",
    });
  });

  it("refuses audio with BEM-079 (this provider cannot take it)", () => {
    expect(() =>
      anthropicAdapter.buildRequest(
        target,
        { messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAA", format: "wav" } }] }] },
        false,
      ),
    ).toThrow(expect.objectContaining({ code: "BEM-079" }));
  });

  it("parses a reply with text and tool_use back into OpenAI style; stop reasons map", async () => {
    fakeAnthropic()
      .reply({
        text: "Let me check.",
        tool_calls: [{ id: "toolu_9", name: "get_weather", arguments: { city: "Rome" } }],
        usage: { prompt_tokens: 30, completion_tokens: 12 },
      })
      .reply({ text: "Cut short", finish: "max_tokens" });
    const r = await callModel(claude, { messages: [{ role: "user", content: "?" }], tools: [weatherTool] }, { env });
    expect(r).toEqual({
      message: {
        role: "assistant",
        content: "Let me check.",
        tool_calls: [{ id: "toolu_9", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }],
      },
      finish_reason: "tool_calls",
      // Anthropic's own stop reason and the cache counts pass through (for /v1/messages clients).
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { prompt_tokens: 30, completion_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      upstream_model: "claude-sonnet-4-5",
    });
    const cut = await callModel(claude, { messages: [{ role: "user", content: "?" }] }, { env });
    expect(cut.finish_reason).toBe("length");
  });

  it("tool round trip: a parsed tool_use goes back as the same tool_use, its result as tool_result", async () => {
    const fake = fakeAnthropic()
      .reply({ tool_calls: [{ id: "toolu_rt", name: "get_weather", arguments: { city: "Kyiv" } }] })
      .reply("It rains in Kyiv.");
    const first: ChatRequest = { messages: [{ role: "user", content: "Weather in Kyiv?" }], tools: [weatherTool] };
    const r1 = await callModel(claude, first, { env });
    const call = r1.message.tool_calls?.[0];
    expect(call?.id).toBe("toolu_rt");
    const second: ChatRequest = {
      ...first,
      messages: [
        ...first.messages,
        { role: "assistant", content: r1.message.content, tool_calls: r1.message.tool_calls },
        { role: "tool", tool_call_id: call?.id, content: "rain, 7°C" },
      ],
    };
    const r2 = await callModel(claude, second, { env });
    expect(r2.message.content).toBe("It rains in Kyiv.");
    expect(fake.last.body.messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_rt", name: "get_weather", input: { city: "Kyiv" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_rt", content: "rain, 7°C" }] },
    ]);
  });

  it("streams text and tool_use from the real event sequence", async () => {
    fakeAnthropic().reply({
      text: "On it",
      chunks: ["On", " it"],
      tool_calls: [{ id: "toolu_s", name: "get_weather", arguments: { city: "Nice" } }],
      usage: { prompt_tokens: 40, completion_tokens: 9 },
    });
    const all = await drain(streamModel(claude, { messages: [{ role: "user", content: "?" }], tools: [weatherTool] }, { env }));
    const events = portable(all);
    expect(events[0]).toEqual({ type: "delta", content: "On" });
    expect(events[1]).toEqual({ type: "delta", content: " it" });
    // Block index 1 (after the text block) becomes tool call index 0.
    expect(events[2]).toEqual({ type: "delta", tool_calls: [{ index: 0, id: "toolu_s", name: "get_weather", arguments: "" }] });
    expect(events.at(-1)).toEqual({
      type: "done",
      finish_reason: "tool_calls",
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { prompt_tokens: 40, completion_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      upstream_model: "claude-sonnet-4-5",
    });
    expect(events.filter((e) => e.type === "done")).toHaveLength(1);
    const acc = await collectStream(
      (async function* () {
        yield* all;
      })(),
      "claude",
    );
    expect(acc.message).toEqual({
      role: "assistant",
      content: "On it",
      tool_calls: [{ id: "toolu_s", type: "function", function: { name: "get_weather", arguments: '{"city":"Nice"}' } }],
    });
  });

  it('a tool called with no input still yields "{}" arguments when streamed', async () => {
    const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const stream = bytes(
      sse("message_start", { message: { model: "claude-x", usage: { input_tokens: 5, output_tokens: 1 } } }),
      sse("content_block_start", { index: 0, content_block: { type: "tool_use", id: "toolu_e", name: "now", input: {} } }),
      sse("content_block_stop", { index: 0 }),
      sse("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 4 } }),
      sse("message_stop", {}),
    );
    const r = await collectStream(anthropicAdapter.parseStream(stream, target), "claude");
    expect(r.message.tool_calls).toEqual([{ id: "toolu_e", type: "function", function: { name: "now", arguments: "{}" } }]);
    expect(r.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4 });
    expect(r.upstream_model).toBe("claude-x");
  });

  it("an error event mid-stream is a retryable upstream error, not a finish", async () => {
    const stream = bytes(
      'event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    );
    const err = await failure(drain(anthropicAdapter.parseStream(stream, target)));
    expect(err).toMatchObject({ code: "BEM-071", disposition: "retry" });
  });

  it("a stream without message_stop → BEM-074", async () => {
    fakeAnthropic().cut("Partial answer");
    const err = await failure(drain(streamModel(claude, { messages: [{ role: "user", content: "?" }] }, { env })));
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).code).toBe("BEM-074");
  });

  it("401 → BEM-073 fatal; 529 overloaded → retryable", async () => {
    fakeAnthropic().status(401).status(529);
    expect(await failure(callModel(claude, { messages: [{ role: "user", content: "?" }] }, { env }))).toMatchObject({
      code: "BEM-073",
      status: 424,
      disposition: "fatal",
    });
    expect(await failure(callModel(claude, { messages: [{ role: "user", content: "?" }] }, { env }))).toMatchObject({
      code: "BEM-071",
      upstreamStatus: 529,
      disposition: "retry",
    });
  });

  it("missing ANTHROPIC_API_KEY → BEM-070 naming it", async () => {
    const err = await failure(callModel(claude, { messages: [{ role: "user", content: "?" }] }, { env: {} }));
    expect(err).toMatchObject({
      code: "BEM-070",
      message: expect.stringContaining("Model 'claude' needs the server secret ANTHROPIC_API_KEY, which is not set on this gateway"),
    });
  });
});

describe("Anthropic adapter: Messages API clients' extras (issue 22)", () => {
  const cached = (text: string) => ({ type: "text" as const, text, cache_control: { type: "ephemeral" as const } });

  it("keeps at most 4 cache breakpoints: the system's first, then the newest messages'", () => {
    const req: ChatRequest = {
      messages: [
        { role: "system", content: [cached("sys")] },
        { role: "user", content: [cached("u1")] },
        { role: "assistant", content: [cached("a1")] },
        { role: "user", content: [cached("u2")] },
        { role: "assistant", content: [cached("a2")] },
        { role: "user", content: [cached("u3")] },
      ],
    };
    const body = anthropicAdapter.buildRequest(target, req, false).body as {
      system: { cache_control?: unknown }[];
      messages: { content: { text: string; cache_control?: unknown }[] }[];
    };
    expect(body.system).toEqual([cached("sys")]);
    const marked = body.messages
      .flatMap((m) => m.content)
      .filter((b) => b.cache_control !== undefined)
      .map((b) => b.text);
    expect(marked).toEqual(["u2", "a2", "u3"]);
  });

  it("a system message after the conversation began goes after the last user turn's blocks; a string system prompt stays a string", () => {
    const req: ChatRequest = {
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: [cached("question")] },
        { role: "system", content: "[style] Answer in French." },
      ],
    };
    const body = anthropicAdapter.buildRequest(target, req, false).body;
    expect(body.system).toBe("You are terse.");
    expect(body.messages).toEqual([{ role: "user", content: [cached("question"), { type: "text", text: "[style] Answer in French." }] }]);
  });

  it("a tool_result keeps is_error and image blocks; the breakpoint on its last part moves to the block", () => {
    const req: ChatRequest = {
      messages: [
        { role: "user", content: "look" },
        { role: "assistant", content: null, tool_calls: [{ id: "toolu_i", type: "function", function: { name: "shot", arguments: "{}" } }] },
        {
          role: "tool",
          tool_call_id: "toolu_i",
          is_error: true,
          content: [
            { type: "text", text: "failed" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" }, cache_control: { type: "ephemeral" } },
          ],
        },
      ],
    };
    const body = anthropicAdapter.buildRequest(target, req, false).body as { messages: { content: unknown[] }[] };
    expect(body.messages[2]!.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "toolu_i",
        is_error: true,
        cache_control: { type: "ephemeral" },
        content: [
          { type: "text", text: "failed" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
        ],
      },
    ]);
  });
});

describe("Anthropic adapter: a thinking budget over a clamped max_tokens", () => {
  const ask = (max: number, budget: number) =>
    anthropicAdapter.buildRequest(
      target,
      { messages: [{ role: "user", content: "q" }], max_output_tokens: max, anthropic: { thinking: { type: "enabled", budget_tokens: budget } } },
      false,
    ).body.thinking;

  it("shrinks below max_tokens, or is left off under Anthropic's 1024 minimum; a budget that fits is sent as given", () => {
    expect(ask(8192, 31999)).toEqual({ type: "enabled", budget_tokens: 8191 });
    expect(ask(1000, 2048)).toBeUndefined();
    expect(ask(32000, 10000)).toEqual({ type: "enabled", budget_tokens: 10000 });
  });
});
