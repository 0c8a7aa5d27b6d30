import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

const tenant = tenantForRuns();

/** The official client with retries on, counting the requests it makes to the worker. */
function countingClient(key: string, send: (req: Request) => Promise<Response> = (req) => exports.default.fetch(req)) {
  let requests = 0;
  const client = new OpenAI({
    apiKey: key,
    baseURL: "http://x/v1",
    maxRetries: 2,
    fetch: async (url: RequestInfo | URL, init?: RequestInit) => {
      requests++;
      return send(new Request(url, init));
    },
  });
  return { client, count: () => requests };
}

/** The worker under test as a deployment that never set OPENAI_API_KEY (deployed: no offline model to stand in). */
async function withoutOpenAIKey(req: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(req, { ...env, OPENAI_API_KEY: undefined, EDGEWEAVE_OFFLINE: undefined }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("a typo is not a routing decision; configuration errors are not retried", () => {
  it("chat: an unknown model is 404 model_not_found naming the closest names, with our code in bem_code", async () => {
    const fake = fakeOpenAI();
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mnii", messages: [{ role: "user", content: "hi" }] } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: { code: string; bem_code: string; type: string; param: string; message: string } };
    expect(body.error).toMatchObject({ code: "model_not_found", bem_code: "BEM-105", type: "invalid_request_error", param: "model" });
    expect(body.error.message).toMatch(/Closest configured: gpt-4o-mini, gpt-4o/);
    expect(fake.calls).toHaveLength(0);
  });

  it("Responses: the official client gets NotFoundError code model_not_found, once (no retry)", async () => {
    const { client, count } = countingClient(tenant().adminKey);
    const err = await client.responses.create({ model: "claude-sonet-4", input: "hi" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    expect((err as Error).message).toContain("claude-sonnet-4");
    expect(count()).toBe(1);
  });

  it("auto and configured names still run", async () => {
    fakeOpenAI().reply("fine");
    const res = await api("/v1/responses", { key: tenant().adminKey, body: { model: "gpt-4o-mini", input: "hi" } });
    expect(res.status).toBe(200);
  });

  it("BEM-070 (a model's secret unset) is 424, which the official client does not retry: chat and Responses, the worker asked once", async () => {
    const { client, count } = countingClient(tenant().adminKey, withoutOpenAIKey);
    for (const call of [
      () => client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
      () => client.responses.create({ model: "gpt-4o-mini", input: "hi", store: false }),
    ]) {
      const before = count();
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err).toMatchObject({ status: 424, error: { code: "BEM-070" } });
      expect((err as Error).message).toContain("OPENAI_API_KEY");
      expect(count() - before).toBe(1);
    }
  });
});
