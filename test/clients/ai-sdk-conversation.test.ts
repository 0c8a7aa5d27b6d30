import { exports } from "cloudflare:workers";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, type ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns, wireMessages, wireText } from "../support/runs";

/**
 * The AI SDK with providerOptions.openai.conversation sends every user message of the chat again
 * each turn, and none of the replies (the conversation holds them): [Q1, Q2] on a thread holding
 * [Q1, A1]. Reconciliation matched only the first message and stored the rest again, so the
 * thread held Q1 twice after turn 2 (and Q1, Q2 twice after turn 3), and the model saw them twice.
 */
const tenant = tenantForRuns();

describe("AI SDK multi-turn chat on a conversation", () => {
  it("each user message and reply is stored once, and the model sees the history once", async () => {
    const fake = fakeOpenAI().reply("A1").reply("A2").reply("A3");
    const key = tenant().adminKey;
    const provider = createOpenAI({ apiKey: key, baseURL: "http://x/v1", fetch: (url, init) => exports.default.fetch(new Request(url, init)) });
    const conv = (await (await api("/v1/conversations", { key, body: {} })).json()) as { id: string };
    const history: ModelMessage[] = [];
    for (const q of ["Q1", "Q2", "Q3"]) {
      history.push({ role: "user", content: q });
      const r = await generateText({
        model: provider("gpt-4o-mini"),
        messages: history,
        maxRetries: 0,
        providerOptions: { openai: { conversation: conv.id } },
      });
      history.push(...r.response.messages);
    }
    const state = (await (await api(`/v1/threads/${conv.id}/state`, { key })).json()) as { channels: { messages: { role: string; content: unknown }[] } };
    expect(state.channels.messages.map((m) => `${m.role}:${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`)).toEqual([
      "user:Q1",
      "assistant:A1",
      "user:Q2",
      "assistant:A2",
      "user:Q3",
      "assistant:A3",
    ]);
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1", "Q2", "A2", "Q3"]);
  });
});
