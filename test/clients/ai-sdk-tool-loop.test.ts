import { exports } from "cloudflare:workers";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * Issue 24, finding 1: an AI SDK tool loop broke its thread.
 * - Default provider (Responses, store: true): each step started a new thread; the first was left
 *   with an unanswered call and the user message was stored twice.
 * - With providerOptions.openai.conversation, step 2 failed 400 BEM-096: the SDK resends
 *   [user, function_call_output], and the user message was stored again before the output.
 * After the loop, one thread holds each message once: user, call, output, (call, output,) answer.
 */
const tenant = tenantForRuns();

type Sent = { body: Record<string, unknown>; answer: Record<string, unknown> };

/** The SDK's provider pointed at the worker, recording every request body and answer. */
function recordingProvider(key: string, sent: Sent[]) {
  return createOpenAI({
    apiKey: key,
    baseURL: "http://x/v1",
    fetch: async (url, init) => {
      const res = await exports.default.fetch(new Request(url, init));
      const text = await res.clone().text();
      let answer: Record<string, unknown> = {};
      if ((res.headers.get("content-type") ?? "").includes("json")) answer = JSON.parse(text) as Record<string, unknown>;
      else {
        const done = text.split("\n").find((l) => l.startsWith("data: ") && l.includes('"response.completed"'));
        if (done) answer = (JSON.parse(done.slice(6)) as { response: Record<string, unknown> }).response;
      }
      sent.push({ body: JSON.parse(String(init?.body ?? "null")) as Record<string, unknown>, answer });
      return res;
    },
  });
}

const weather = tool({
  description: "Weather for a city",
  inputSchema: jsonSchema<{ city: string }>({
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  }),
  execute: async ({ city }) => ({ city, sky: city === "Paris" ? "sunny" : "rainy" }),
});

/** The thread's messages, each as `role` or `role:call ids`, and the user texts. */
async function threadShape(thread: string): Promise<{ roles: string[]; users: string[] }> {
  const res = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey });
  expect(res.status, await res.clone().text()).toBe(200);
  const messages = (
    (await res.json()) as { channels: { messages: { role: string; content: unknown; tool_calls?: { id: string }[]; tool_call_id?: string }[] } }
  ).channels.messages;
  return {
    roles: messages.map((m) =>
      m.tool_calls?.length ? `assistant:${m.tool_calls.map((t) => t.id).join(",")}` : m.role === "tool" ? `tool:${m.tool_call_id}` : m.role,
    ),
    users: messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))),
  };
}

async function threadCount(): Promise<number> {
  return ((await (await api("/v1/threads?limit=100", { key: tenant().adminKey })).json()) as { threads: unknown[] }).threads.length;
}

/** Two tool steps and an answer: a three-step loop. */
const script = () =>
  fakeOpenAI()
    .reply({ tool_calls: [{ id: "call_offline_0", name: "weather", arguments: { city: "Paris" } }] })
    .reply({ tool_calls: [{ id: "call_offline_1", name: "weather", arguments: { city: "Oslo" } }] })
    .reply("Sunny in Paris, rainy in Oslo.");

const EXPECTED = ["user", "assistant:call_offline_0", "tool:call_offline_0", "assistant:call_offline_1", "tool:call_offline_1", "assistant"];

describe("an AI SDK tool loop keeps one thread", () => {
  for (const mode of ["generateText", "streamText"] as const)
    it(`default provider (Responses, store: true), ${mode}: every step continues the first step's thread`, async () => {
      const fake = script();
      const sent: Sent[] = [];
      const before = await threadCount();
      const args = {
        model: recordingProvider(tenant().adminKey, sent)("gpt-4o-mini"),
        prompt: "Weather in Paris and Oslo?",
        maxRetries: 0,
        stopWhen: stepCountIs(3),
        tools: { weather },
      };
      const text = mode === "generateText" ? (await generateText(args)).text : await streamText(args).text;
      expect(text).toBe("Sunny in Paris, rainy in Oslo.");
      expect(fake.calls).toHaveLength(3);
      const threads = sent.map((s) => (s.answer.edgeweave as { thread_id: string }).thread_id);
      expect(new Set(threads).size, JSON.stringify(sent.map((s) => s.body.input))).toBe(1);
      expect(await threadCount()).toBe(before + 1);
      const shape = await threadShape(threads[0]!);
      expect(shape.roles).toEqual(EXPECTED);
      expect(shape.users).toEqual(["Weather in Paris and Oslo?"]);
    });

  it("providerOptions.openai.conversation: the SDK's [user, function_call_output] resends continue at the open call", async () => {
    const fake = script();
    const sent: Sent[] = [];
    const conv = (await (await api("/v1/conversations", { key: tenant().adminKey, body: {} })).json()) as { id: string };
    const r = await generateText({
      model: recordingProvider(tenant().adminKey, sent)("gpt-4o-mini"),
      prompt: "Weather in Paris and Oslo?",
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: { weather },
      providerOptions: { openai: { conversation: conv.id } },
    });
    expect(r.text).toBe("Sunny in Paris, rainy in Oslo.");
    expect(fake.calls).toHaveLength(3);
    // What the SDK sent: the user message again on every step, the outputs, no calls.
    expect((sent[1]!.body.input as { type?: string; role?: string }[]).map((i) => i.type ?? i.role)).toContain("function_call_output");
    const shape = await threadShape(conv.id);
    expect(shape.roles).toEqual(EXPECTED);
    expect(shape.users).toEqual(["Weather in Paris and Oslo?"]);
    // The model saw each message once, in order.
    const last = (fake.calls[2]!.body as { messages: { role: string }[] }).messages.map((m) => m.role);
    expect(last).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
  });
});
