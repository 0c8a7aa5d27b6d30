import { describe, expect, it } from "vitest";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/**
 * count_tokens counts the request as sent. It took edgeweave's body extensions (thread_id, agent,
 * memory_scopes, capabilities, context) and did nothing with them: a count asked for a thread came
 * back without the thread's turns or its facts, as if it were what the model would see. Each is a
 * 400 naming it; the headers Claude Code sends on every call stay ignored.
 */
const tenant = tenantForRuns({ memberScopes: ["session:ct-*", "organization:acme"] });
const anthropic = { "anthropic-version": "2023-06-01" };
const hi = [{ role: "user", content: "hello there" }];

const count = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api("/v1/messages/count_tokens", { key: tenant().memberKey, body: { model: "auto", messages: hi, ...body }, headers: { ...anthropic, ...headers } });

describe("POST /v1/messages/count_tokens", () => {
  it("counts the sent request", async () => {
    const res = await count({});
    expect(res.status).toBe(200);
    expect(((await res.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  });

  const fields: [string, unknown][] = [
    ["thread_id", "ct-1"],
    ["agent", "assistant"],
    ["memory_scopes", ["organization:acme"]],
    ["capabilities", ["tools"]],
    ["context", { user_name: "Ada" }],
  ];
  for (const [field, value] of fields) {
    it(`${field} in the body is 400 invalid_request_error naming it (it would load nothing)`, async () => {
      const res = await count({ [field]: value });
      const j = (await res.json()) as { type: string; error: { type: string; bem_code: string; message: string } };
      expect(res.status).toBe(400);
      expect(j).toMatchObject({ type: "error", error: { type: "invalid_request_error", bem_code: "BEM-011" } });
      expect(j.error.message).toContain(field);
    });
  }

  it("Claude Code's headers (X-Thread-Id, the session mode) are ignored, as it sends them on every call", async () => {
    const res = await count({}, { "X-Thread-Id": uniqueThread("ct"), "x-edgeweave-claude-session": "thread", "x-claude-code-session-id": "s1" });
    expect(res.status).toBe(200);
  });
});
