import { exports } from "cloudflare:workers";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, wireMessages, wireText } from "../support/runs";

const tenant = tenantForRuns();

/** The AI SDK's default OpenAI provider (the Responses API) pointed at the worker. */
const provider = (key: string) => createOpenAI({ apiKey: key, baseURL: "http://x/v1", fetch: (url, init) => exports.default.fetch(new Request(url, init)) });

describe("the Vercel AI SDK (`ai` + `@ai-sdk/openai`, default provider = Responses) against the worker", () => {
  it("a conversation resent as the SDK does it (earlier answers as item_reference, store: true) sees the whole history", async () => {
    const fake = fakeOpenAI().reply("Hello Ada!").reply("Your name is Ada.");
    const sent: unknown[] = [];
    const recording = createOpenAI({
      apiKey: tenant().adminKey,
      baseURL: "http://x/v1",
      fetch: async (url, init) => {
        sent.push(JSON.parse(String(init?.body ?? "null")));
        return exports.default.fetch(new Request(url, init));
      },
    });
    const first = { role: "user" as const, content: "Hi, I am Ada." };
    const r1 = await generateText({ model: recording("gpt-4o-mini"), messages: [first], maxRetries: 0 });
    const r2 = await generateText({
      model: recording("gpt-4o-mini"),
      messages: [first, ...r1.response.messages, { role: "user", content: "What is my name?" }],
      maxRetries: 0,
    });
    expect(r2.text).toBe("Your name is Ada.");
    // The SDK referenced the earlier answer by id rather than resending it.
    expect(JSON.stringify(sent[1])).toContain('"type":"item_reference"');
    expect(wireMessages(fake.calls[1]!.body).map((m) => `${m.role}:${wireText(m)}`)).toEqual([
      "user:Hi, I am Ada.",
      "assistant:Hello Ada!",
      "user:What is my name?",
    ]);
  });

  it("generateText", async () => {
    const fake = fakeOpenAI().reply("Hello from edgeweave");
    const r = await generateText({ model: provider(tenant().adminKey)("gpt-4o-mini"), prompt: "Say hello", maxRetries: 0 });
    expect(r.text).toBe("Hello from edgeweave");
    expect(r.usage.inputTokens).toBe(12);
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Say hello"]);
  });

  it("streamText", async () => {
    fakeOpenAI().reply({ text: "streamed words", chunks: ["streamed ", "words"] });
    const r = streamText({ model: provider(tenant().adminKey)("gpt-4o-mini"), prompt: "Stream", maxRetries: 0 });
    let text = "";
    for await (const t of r.textStream) text += t;
    expect(text).toBe("streamed words");
  });

  it("a tool loop (client tools executed by the SDK, history resent with store)", async () => {
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_ai1", name: "weather", arguments: { city: "Paris" } }] })
      .reply("Sunny in Paris");
    const r = await generateText({
      model: provider(tenant().adminKey)("gpt-4o-mini"),
      prompt: "Weather in Paris?",
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        weather: tool({
          description: "Weather for a city",
          inputSchema: jsonSchema<{ city: string }>({
            type: "object",
            properties: { city: { type: "string" } },
            required: ["city"],
            additionalProperties: false,
          }),
          execute: async ({ city }) => ({ city, sky: "sunny" }),
        }),
      },
    });
    expect(r.text).toBe("Sunny in Paris");
    const second = wireMessages(fake.calls[1]!.body) as { role: string; tool_call_id?: string }[];
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(second[2]!.tool_call_id).toBe("call_ai1");
  });
});
