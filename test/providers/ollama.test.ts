import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { callModel, streamModel } from "../../src/providers/call";
import { collectStream } from "../support/collect-stream";
import type { ChatRequest } from "../../src/providers/types";
import { fakeOllama } from "../support/fake-ollama";
import { clearUpstream } from "../support/upstream";
import { drain, failure, model } from "./helpers";

afterEach(() => clearUpstream());

const llama = model("local-llama", "ollama", { model: "llama3.2" });
const tool = { type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } };

describe("Ollama /api/chat adapter", () => {
  it("sends the exact request: /api/chat, no key, images as base64, tool calls as objects, options", async () => {
    const fake = fakeOllama().reply("ok");
    const req: ChatRequest = {
      messages: [
        { role: "system", content: "Be brief." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is it?" },
            { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } },
          ],
        },
        { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Bern"}' } }] },
        { role: "tool", tool_call_id: "c1", content: "snow" },
      ],
      tools: [tool],
      temperature: 0,
      max_output_tokens: 64,
      stop: "###",
      response_format: { type: "json_object" },
    };
    await callModel(llama, req, { env });
    expect(fake.last.url).toBe("http://localhost:11434/api/chat");
    expect(fake.last.headers.authorization).toBeUndefined();
    expect(fake.last.body).toEqual({
      model: "llama3.2",
      stream: false,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "What is it?", images: ["/9j/4AAQ"] },
        { role: "assistant", content: "", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Bern" } } }] },
        { role: "tool", content: "snow", tool_name: "get_weather" },
      ],
      tools: [tool],
      format: "json",
      options: { temperature: 0, num_predict: 64, stop: ["###"] },
    });
  });

  it("json_schema response_format becomes the format schema", async () => {
    const fake = fakeOllama().reply("{}");
    const schema = { type: "object", properties: { a: { type: "number" } } };
    await callModel(
      llama,
      { messages: [{ role: "user", content: "x" }], response_format: { type: "json_schema", json_schema: { name: "A", schema } } },
      { env },
    );
    expect(fake.last.body.format).toEqual(schema);
  });

  it("parses the reply: content, tool calls with generated ids, usage from eval counts", async () => {
    fakeOllama().reply({
      text: "Checking",
      tool_calls: [{ name: "get_weather", arguments: { city: "Bern" } }],
      usage: { prompt_tokens: 26, completion_tokens: 7 },
    });
    const r = await callModel(llama, { messages: [{ role: "user", content: "x" }], tools: [tool] }, { env });
    expect(r).toEqual({
      message: {
        role: "assistant",
        content: "Checking",
        tool_calls: [{ id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: "function", function: { name: "get_weather", arguments: '{"city":"Bern"}' } }],
      },
      finish_reason: "tool_calls",
      usage: { prompt_tokens: 26, completion_tokens: 7 },
      upstream_model: "llama3.2",
    });
  });

  it("streams NDJSON until done:true, with usage and done_reason", async () => {
    const fake = fakeOllama().reply({
      text: "Hello there",
      chunks: ["Hel", "lo", " there"],
      finish: "length",
      usage: { prompt_tokens: 3, completion_tokens: 3 },
    });
    const events = await drain(streamModel(llama, { messages: [{ role: "user", content: "x" }] }, { env }));
    expect(fake.last.body.stream).toBe(true);
    expect(events).toEqual([
      { type: "delta", content: "Hel" },
      { type: "delta", content: "lo" },
      { type: "delta", content: " there" },
      { type: "done", finish_reason: "length", usage: { prompt_tokens: 3, completion_tokens: 3 }, upstream_model: "llama3.2" },
    ]);
  });

  it("streamed tool calls arrive whole and accumulate", async () => {
    fakeOllama().reply({ tool_calls: [{ name: "get_weather", arguments: { city: "Riga" } }] });
    const r = await collectStream(streamModel(llama, { messages: [{ role: "user", content: "x" }], tools: [tool] }, { env }), "local-llama");
    expect(r.finish_reason).toBe("tool_calls");
    expect(r.message.tool_calls?.[0]?.function).toEqual({ name: "get_weather", arguments: '{"city":"Riga"}' });
  });

  it("a stream without the done line → BEM-074; a 404 (model not pulled) → BEM-073", async () => {
    fakeOllama().cut("Half").status(404);
    expect(await failure(drain(streamModel(llama, { messages: [{ role: "user", content: "x" }] }, { env })))).toMatchObject({ code: "BEM-074" });
    expect(await failure(callModel(llama, { messages: [{ role: "user", content: "x" }] }, { env }))).toMatchObject({ code: "BEM-073", upstreamStatus: 404 });
  });

  it("image URLs cannot be sent (Ollama does not fetch) → BEM-079", async () => {
    const fake = fakeOllama();
    const err = await failure(
      callModel(llama, { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png" } }] }] }, { env }),
    );
    expect(err).toMatchObject({ code: "BEM-079" });
    expect(fake.calls).toHaveLength(0);
  });

  it("uses a key only when api_key_env is set (e.g. a hosted Ollama)", async () => {
    const fake = fakeOllama("https://ollama.example.com").reply("ok");
    await callModel(
      model("hosted", "ollama", { base_url: "https://ollama.example.com", api_key_env: "OLLAMA_KEY" }),
      { messages: [{ role: "user", content: "x" }] },
      { env: { OLLAMA_KEY: "ok-123" } },
    );
    expect(fake.last.headers.authorization).toBe("Bearer ok-123");
  });
});
