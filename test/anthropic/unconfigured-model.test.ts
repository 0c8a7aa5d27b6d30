import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { routerFor } from "../../src/routing/bundled";
import { authHeaders } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * Issue 36: Claude Code run as the README says (`ANTHROPIC_API_KEY=$KEY claude`) asks for its own model
 * name. Offline (`npm start`, no provider keys) that was 424 "needs the secret ANTHROPIC_API_KEY" — the
 * variable the user had just set, on the client. Offline the offline model now answers in its place
 * (and says so); a deployed gateway's 424 names the server secret and how to set it.
 */
const tenant = tenantForRuns();

async function messages(vars: Partial<Env>, model: string): Promise<Response> {
  const ctx = createExecutionContext();
  const body = { model, max_tokens: 64, messages: [{ role: "user", content: "Hello there" }] };
  const req = new Request("http://x/v1/messages?beta=true", {
    method: "POST",
    headers: { ...authHeaders(tenant().adminKey), "anthropic-version": "2023-06-01" },
    body: JSON.stringify(body),
  });
  const res = await app.fetch(req, { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("a named model whose provider secret is unset", () => {
  it("offline, Claude Code's dated model name is answered by the offline model, with a warning saying so", async () => {
    const res = await messages({ ANTHROPIC_API_KEY: "" }, "claude-sonnet-4-20250514");
    expect(res.status).toBe(200);
    const body = await res.json<{ model: string; content: { type: string; text: string }[]; edgeweave: { warnings: string[] } }>();
    expect(body.model).toBe("offline-echo");
    expect(body.content[0]!.text).toContain("Hello there");
    expect(body.edgeweave.warnings[0]).toBe(
      "claude-sonnet-4 is not configured here (secret ANTHROPIC_API_KEY is not set): offline-echo, the offline model, answered instead",
    );
  });

  it("the route says which model stood in for which, and why", () => {
    const r = routerFor({ EDGEWEAVE_OFFLINE: "1" }).resolve({ content: "hi", model_override: "gpt-4o" });
    expect(r.model.name).toBe("offline-echo");
    expect(r.reason).toBe("offline-echo: stands in for gpt-4o (secret OPENAI_API_KEY is not set)");
    // A configured model named offline is still that model.
    expect(routerFor({ EDGEWEAVE_OFFLINE: "1", OPENAI_API_KEY: "sk-x" }).resolve({ content: "hi", model_override: "gpt-4o" }).model.name).toBe("gpt-4o");
  });

  it("deployed, the 424 names the server secret and where it goes, not the client's variable alone", async () => {
    const res = await messages({ ANTHROPIC_API_KEY: "", EDGEWEAVE_OFFLINE: "0" }, "claude-sonnet-4-20250514");
    expect(res.status).toBe(424);
    const body = await res.json<{ error: { message: string; bem_code: string } }>();
    expect(body.error.bem_code).toBe("BEM-070");
    expect(body.error.message).toContain("needs the server secret ANTHROPIC_API_KEY, which is not set on this gateway");
    expect(body.error.message).toContain("wrangler secret put ANTHROPIC_API_KEY");
  });
});
