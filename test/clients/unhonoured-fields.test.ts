import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * Fields of OpenAI's chat and Responses APIs that this server cannot honour were accepted and did
 * nothing: `logprobs: true` answered `logprobs: null`, a Responses `prompt` (a stored prompt template
 * at OpenAI) ran without its instructions. Each is a 400 BEM-011 naming it, nothing called or
 * stored; their "off" values (what clients send by default) still pass.
 */
const tenant = tenantForRuns();

const refused = async (path: string, body: Record<string, unknown>, field: string) => {
  const res = await api(path, { key: tenant().adminKey, body });
  expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
  const err = ((await res.json()) as { error: { code: string; message: string } }).error;
  expect(err.code).toBe("BEM-011");
  expect(err.message).toContain(field);
};

const chat = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
const responses = { model: "gpt-4o-mini", input: "hi" };

describe("fields this server cannot honour are refused, not ignored", () => {
  it("chat: logprobs true, top_logprobs above 0", async () => {
    await refused("/v1/chat/completions", { ...chat, logprobs: true }, "logprobs");
    await refused("/v1/chat/completions", { ...chat, logprobs: true, top_logprobs: 3 }, "logprobs");
    await refused("/v1/chat/completions", { ...chat, top_logprobs: 2 }, "top_logprobs");
  });

  it("responses: a stored prompt, top_logprobs above 0, include of the output's logprobs", async () => {
    await refused("/v1/responses", { ...responses, prompt: { id: "pmpt_123", variables: { city: "Paris" } } }, "prompt");
    await refused("/v1/responses", { ...responses, top_logprobs: 5 }, "top_logprobs");
    await refused("/v1/responses", { ...responses, include: ["message.output_text.logprobs"] }, "include");
  });

  it("their off values pass: logprobs false, top_logprobs 0 or null, prompt null, an include of other items", async () => {
    fakeOpenAI().reply("a").reply("b");
    const a = await api("/v1/chat/completions", { key: tenant().adminKey, body: { ...chat, logprobs: false, top_logprobs: null } });
    expect(a.status, await a.clone().text()).toBe(200);
    const b = await api("/v1/responses", {
      key: tenant().adminKey,
      body: { ...responses, prompt: null, top_logprobs: 0, include: ["reasoning.encrypted_content"] },
    });
    expect(b.status, await b.clone().text()).toBe(200);
  });
});
