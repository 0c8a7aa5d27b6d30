import { exports } from "cloudflare:workers";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText } from "ai";
import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOllama } from "../support/fake-ollama";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * The AI SDK's chat provider sends its standard settings `seed`, `frequencyPenalty` and
 * `presencePenalty` as OpenAI's chat fields. They were accepted and never reached the model: a
 * reproducible (seeded) run was not one, and no warning said so.
 */
const tenant = tenantForRuns();

const chatProvider = (key: string) =>
  createOpenAI({ apiKey: key, baseURL: "http://x/v1", fetch: (url, init) => exports.default.fetch(new Request(url, init)) }).chat;

const SAMPLING = { seed: 42, frequency_penalty: 0.5, presence_penalty: -0.25 };

/** A chat turn at `model` carrying the three sampling fields; it must answer 200. */
async function sampled(model: string): Promise<Response> {
  const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: { model, messages: [{ role: "user", content: "hi" }], ...SAMPLING } });
  expect(res.status, await res.clone().text()).toBe(200);
  return res;
}

describe("chat completions: seed, frequency_penalty, presence_penalty", () => {
  it("reach an OpenAI-compatible model as the AI SDK sends them", async () => {
    const fake = fakeOpenAI().reply("seeded");
    const r = await generateText({
      model: chatProvider(tenant().adminKey)("gpt-4o-mini"),
      prompt: "hi",
      seed: 42,
      frequencyPenalty: 0.5,
      presencePenalty: -0.25,
      maxRetries: 0,
    });
    expect(r.text).toBe("seeded");
    expect(fake.last.body).toMatchObject(SAMPLING);
  });

  it("reach an Ollama model as its options", async () => {
    const fake = fakeOllama().reply("seeded");
    await sampled("llama3.2");
    expect((fake.last.body as { options?: Record<string, unknown> }).options).toMatchObject(SAMPLING);
  });

  it("are named in the warnings when the model is Anthropic's, which has none of them", async () => {
    const fake = fakeAnthropic().reply("no seed here");
    const res = await sampled("claude-sonnet-4");
    const body = (await res.json()) as { edgeweave: { warnings: string[] } };
    expect(body.edgeweave.warnings.join("\n")).toContain("seed, frequency_penalty, presence_penalty");
    expect(fake.last.body).not.toHaveProperty("seed");
  });

  it("out of OpenAI's range is 400 BEM-011 naming the field", async () => {
    for (const bad of [{ frequency_penalty: 2.5 }, { presence_penalty: -3 }, { seed: 1.5 }]) {
      const res = await api("/v1/chat/completions", {
        key: tenant().adminKey,
        body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], ...bad },
      });
      expect(res.status).toBe(400);
      const err = ((await res.json()) as { error: { code: string; message: string } }).error;
      expect(err.code).toBe("BEM-011");
      expect(err.message).toContain(Object.keys(bad)[0]);
    }
  });
});
