import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { allowedOrigin } from "../../src/http/cors";
import { createTenant } from "../support/tenants";

describe("CORS for browser apps (CORS_ORIGINS=https://app.example.com in tests)", () => {
  it("answers a preflight from a listed origin without a key", async () => {
    const res = await exports.default.fetch("http://x/v1/chat/completions", {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(res.headers.get("access-control-allow-headers")).toContain("authorization");
  });

  it("a preflight allows the headers the official SDKs send from a browser and the ones edgeweave reads; answers expose its own", async () => {
    // What the openai SDK (dangerouslyAllowBrowser) and @anthropic-ai/sdk add in a browser, and edgeweave's request headers.
    const requested = [
      "authorization",
      "content-type",
      "x-stainless-lang",
      "x-stainless-package-version",
      "x-stainless-os",
      "x-stainless-arch",
      "x-stainless-runtime",
      "x-stainless-runtime-version",
      "x-stainless-retry-count",
      "x-stainless-timeout",
      "anthropic-dangerous-direct-browser-access",
      "idempotency-key",
      "x-edgeweave-bookmark",
      "x-edgeweave-trace",
      "x-edgeweave-agent",
      "x-edgeweave-memory-scopes",
    ];
    const res = await exports.default.fetch("http://x/v1/chat/completions", {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": requested.join(", ") },
    });
    expect(res.status).toBe(204);
    const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/\s*,\s*/);
    expect(requested.filter((h) => !allowed.includes(h))).toEqual([]);
    // The bookmark of a fact write must reach the page's code, or it cannot send it back (README, "Your own writes").
    const t = await createTenant();
    const write = await exports.default.fetch("http://x/v1/memory/facts", {
      method: "POST",
      headers: { origin: "https://app.example.com", authorization: `Bearer ${t.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ scope: "organization:acme", kind: "style", text: "Be brief." }),
    });
    expect(write.status).toBe(201);
    const exposed = (write.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(",");
    expect(exposed).toEqual(expect.arrayContaining(["x-edgeweave-bookmark", "idempotent-replayed"]));
  });

  it("gives other origins no CORS headers, and still requires a key", async () => {
    const pre = await exports.default.fetch("http://x/v1/models", {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "GET" },
    });
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const t = await createTenant();
    const ok = await exports.default.fetch("http://x/v1/models", { headers: { origin: "https://app.example.com", authorization: `Bearer ${t.memberKey}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(ok.headers.get("access-control-expose-headers")).toContain("x-edgeweave-model");
    const noKey = await exports.default.fetch("http://x/v1/models", { headers: { origin: "https://app.example.com" } });
    expect(noKey.status).toBe(401);
  });

  it("every /v1 answer — with or without an Origin, success or error — carries the same CORS headers", async () => {
    const t = await createTenant();
    const headersOf = async (path: string, headers: Record<string, string>) => {
      const res = await exports.default.fetch(`http://x${path}`, { headers });
      return {
        status: res.status,
        allow: res.headers.get("access-control-allow-origin"),
        expose: res.headers.get("access-control-expose-headers"),
        vary: res.headers.get("vary"),
        requestId: /^[0-9a-f-]{36}$/.test(res.headers.get("x-request-id") ?? ""),
        nosniff: res.headers.get("x-content-type-options"),
      };
    };
    const expose = "x-edgeweave-model,x-edgeweave-route,x-edgeweave-warnings,x-edgeweave-bookmark,idempotent-replayed,x-request-id,retry-after,server-timing";
    const key = { authorization: `Bearer ${t.memberKey}` };
    const origin = { origin: "https://app.example.com" };
    const common = { expose, vary: "Origin", requestId: true, nosniff: "nosniff" };
    expect(await headersOf("/v1/models", key)).toEqual({ status: 200, allow: null, ...common });
    expect(await headersOf("/v1/models", { ...key, ...origin })).toEqual({ status: 200, allow: "https://app.example.com", ...common });
    expect(await headersOf("/v1/models", origin)).toEqual({ status: 401, allow: "https://app.example.com", ...common });
    // An unknown route's error is answered past the CORS layer (app.notFound): the same headers but Vary.
    expect(await headersOf("/v1/no-such-route", { ...key, ...origin })).toEqual({ status: 404, allow: "https://app.example.com", ...common, vary: null });
    expect(await headersOf("/v1/models", { ...key, origin: "https://evil.example" })).toEqual({ status: 200, allow: null, ...common });
    // LangGraph's API also exposes where a run is (the SDK reads Content-Location and Location).
    expect(await headersOf("/v1/agent-protocol/info", { ...key, ...origin })).toEqual({
      status: 200,
      allow: "https://app.example.com",
      ...common,
      expose: `content-location,location,${expose}`,
    });
  });

  it("tags every response with a request id", async () => {
    const res = await exports.default.fetch("http://x/nope");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("matches origins exactly", () => {
    expect(allowedOrigin("https://a.test", "https://a.test, https://b.test")).toBe("https://a.test");
    expect(allowedOrigin("https://a.test.evil", "https://a.test")).toBeNull();
    expect(allowedOrigin("https://x.test", "*")).toBe("https://x.test");
    expect(allowedOrigin("https://x.test", undefined)).toBeNull();
    expect(allowedOrigin("https://x.test", "")).toBeNull();
  });
});

// Issue 36: with CORS_ORIGINS empty every /v1 answer still carried Access-Control-Expose-Headers and a
// preflight was answered 204; the docs say "empty: no CORS headers".
describe("CORS_ORIGINS empty", () => {
  const call = async (init: RequestInit, path = "/v1/models") => {
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(`http://x${path}`, init), { ...env, CORS_ORIGINS: "" }, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };
  const corsHeaders = (res: Response) => [...res.headers.keys()].filter((h) => h.startsWith("access-control-"));

  it("sends no CORS header on an answer, and answers no preflight as CORS", async () => {
    const t = await createTenant();
    const ok = await call({ headers: { origin: "https://app.example.com", authorization: `Bearer ${t.memberKey}` } });
    expect(ok.status).toBe(200);
    expect(corsHeaders(ok)).toEqual([]);
    const pre = await call({ method: "OPTIONS", headers: { origin: "https://app.example.com", "access-control-request-method": "GET" } });
    expect(pre.status).not.toBe(204);
    expect(corsHeaders(pre)).toEqual([]);
  });
});
