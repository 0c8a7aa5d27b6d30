import { exports } from "cloudflare:workers";
import { Agent, OpenAIProvider, Runner, tool } from "@openai/agents";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, wireMessages } from "../support/runs";

const tenant = tenantForRuns();

function runner(key: string): Runner {
  const openAIClient = new OpenAI({
    apiKey: key,
    baseURL: "http://x/v1",
    maxRetries: 0,
    fetch: (url: RequestInfo | URL, init?: RequestInit) => exports.default.fetch(new Request(url, init)),
  });
  return new Runner({ modelProvider: new OpenAIProvider({ openAIClient, useResponses: true }), tracingDisabled: true });
}

describe("the OpenAI Agents SDK (@openai/agents, Responses) against the worker", () => {
  it("runs an agent with a function tool to its final output", async () => {
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_ag1", name: "add", arguments: { a: 2, b: 3 } }] })
      .reply("2 + 3 = 5");
    const add = tool({
      name: "add",
      description: "Add two numbers",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => String(a + b),
    });
    const agent = new Agent({ name: "calc", instructions: "You add numbers.", model: "gpt-4o-mini", tools: [add] });
    const result = await runner(tenant().adminKey).run(agent, "What is 2 + 3?");
    expect(result.finalOutput).toBe("2 + 3 = 5");
    const second = wireMessages(fake.calls[1]!.body) as { role: string; content: unknown; tool_call_id?: string }[];
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_ag1", content: "5" });
  });
});
