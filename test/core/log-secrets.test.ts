import { afterEach, describe, expect, it } from "vitest";
import { redact } from "../../src/core/log";
import { loggedLines } from "../support/logs";
import { clearUpstream, mockUpstream } from "../support/upstream";
import { api, createTenant } from "../support/tenants";

/**
 * Issue 11, finding 9: a malformed 200 body, or an SSE error event, that echoes
 * the request's Authorization header reached the log unredacted. Every logged
 * upstream text is redacted, whatever the status.
 */
const PROVIDER_KEYS = ["sk-test-openai", "sk-ant-test", "gsk-test", "nvapi-test"];
const ORIGINS = ["https://api.openai.com", "https://api.anthropic.com", "https://api.groq.com", "https://integrate.api.nvidia.com"];

/** What a careless upstream says back: the headers it got, verbatim. */
function echo(req: Request): string {
  return `upstream confused; you sent Authorization: ${req.headers.get("authorization") ?? ""} x-api-key: ${req.headers.get("x-api-key") ?? ""} key=${req.headers.get("authorization")?.replace("Bearer ", "") ?? req.headers.get("x-api-key") ?? ""}`;
}

afterEach(() => clearUpstream());

async function chat(key: string, model: string, stream = false) {
  const res = await api("/v1/chat/completions", { key, body: { model, stream, messages: [{ role: "user", content: "hi" }] } });
  return { status: res.status, text: await res.text() };
}

function expectNoKeyLogged() {
  const lines = loggedLines();
  const seen = lines.join("\n");
  expect(lines.length).toBeGreaterThan(0); // the failure was logged …
  for (const k of PROVIDER_KEYS) expect(seen).not.toContain(k); // … without the key
}

describe("provider keys never reach the logs", () => {
  it("a malformed 200 body echoing the Authorization header", async () => {
    const t = await createTenant();
    for (const o of ORIGINS) mockUpstream(o, (req) => new Response(echo(req), { status: 200, headers: { "content-type": "application/json" } }));
    const r = await chat(t.adminKey, "gpt-4o-mini");
    expect(r.status).toBeGreaterThanOrEqual(500);
    for (const k of PROVIDER_KEYS) expect(r.text).not.toContain(k);
    expectNoKeyLogged();
  });

  it("an SSE error event echoing the Authorization header", async () => {
    const t = await createTenant();
    for (const o of ORIGINS) {
      mockUpstream(o, (req) => {
        const event = o.includes("anthropic")
          ? `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: echo(req) } })}\n\n`
          : `data: ${JSON.stringify({ error: { message: echo(req), type: "invalid_request_error" } })}\n\n`;
        return new Response(event, { status: 200, headers: { "content-type": "text/event-stream" } });
      });
    }
    const r = await chat(t.adminKey, "gpt-4o-mini", true);
    for (const k of PROVIDER_KEYS) expect(r.text).not.toContain(k);
    expectNoKeyLogged();
  });

  it("an error status whose body echoes the key in another spelling", async () => {
    const t = await createTenant();
    for (const o of ORIGINS)
      mockUpstream(o, (req) => new Response(JSON.stringify({ error: { message: echo(req).toUpperCase() + " " + echo(req) } }), { status: 400 }));
    const r = await chat(t.adminKey, "gpt-4o-mini");
    expect(r.status).toBe(424); // BEM-073, logged (redacted) for the operator
    const seen = loggedLines().join("\n");
    for (const k of PROVIDER_KEYS) expect(seen).not.toContain(k);
  });
});

describe("redact()", () => {
  it.each([
    ["Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"],
    ['{"authorization":"Bearer abcdefghijklmnop"}', "abcdefghijklmnop"],
    ['{"x-api-key": "anthropic-style-value-123"}', "anthropic-style-value-123"],
    ["api_key=zzzzzzzzzzzz&x=1", "zzzzzzzzzzzz"],
    ["bearer Zm9vYmFyYmF6cXV4", "Zm9vYmFyYmF6cXV4"],
    ["key sk-proj-AbCdEf0123456789 was wrong", "sk-proj-AbCdEf0123456789"],
    ["gsk_0123456789abcdef leaked", "gsk_0123456789abcdef"],
    ["nvapi-0123456789abcdef leaked", "nvapi-0123456789abcdef"],
    ["ew_" + "A".repeat(43), "A".repeat(43)],
    ["whsec_" + "ab".repeat(32), "ab".repeat(32)],
    ["the configured key SK-TEST-OPENAI, shouted", "SK-TEST-OPENAI"],
  ])("redacts %s", (text, secret) => {
    expect(redact(text)).not.toContain(secret);
    expect(redact(text)).toContain("[redacted]");
  });
  it("leaves ordinary text alone", () => {
    for (const t of ["Model 'gpt-4o' needs the secret OPENAI_API_KEY, which is not set", "task-queue ask-me risk-free", "upstream 503: overloaded"])
      expect(redact(t)).toBe(t);
  });
});
