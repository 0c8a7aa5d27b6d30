import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { tenantForRuns } from "../support/runs";
import { api } from "../support/tenants";

/**
 * A thinking budget Anthropic refuses (below 1,024, or not below max_tokens) went on: to an Anthropic model
 * the budget was shrunk to max_tokens − 1, or thinking was left off, without a word. It is a 400 naming
 * thinking.budget_tokens, in Anthropic's shape; the shrink stays for the clamp to a model's output limit.
 */
const tenant = tenantForRuns();
const anthropic = { "anthropic-version": "2023-06-01" };
const send = (max_tokens: number, budget_tokens: number, model = "auto") =>
  api("/v1/messages", {
    key: tenant().adminKey,
    body: { model, max_tokens, thinking: { type: "enabled", budget_tokens }, messages: [{ role: "user", content: "think" }] },
    headers: anthropic,
  });

describe("thinking.budget_tokens", () => {
  for (const [max, budget, why] of [
    [1000, 1024, "not below max_tokens"],
    [1024, 1024, "equal to max_tokens"],
    [4000, 500, "below 1,024"],
  ] as const) {
    it(`${why} is 400 invalid_request_error naming it`, async () => {
      const res = await send(max, budget);
      const j = (await res.json()) as { type: string; error: { type: string; bem_code: string; message: string } };
      expect(res.status).toBe(400);
      expect(j).toMatchObject({ type: "error", error: { type: "invalid_request_error", bem_code: "BEM-011" } });
      expect(j.error.message).toContain("budget_tokens");
    });
  }

  it("a budget Anthropic takes reaches an Anthropic model unchanged", async () => {
    const fake = fakeAnthropic().reply("ok");
    const res = await send(4000, 2048, "claude-sonnet-4");
    expect(res.status, await res.clone().text()).toBe(200);
    expect(fake.last.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
  });
});
