import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { isAppError } from "../../src/errors";
import { modelByName, models, requireAgent, routerFor } from "../../src/routing/registry";
import { agentByName, defaultModel } from "../support/registry-lookups";
import { routeHeaders } from "../../src/routing/route-headers";

function errorOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    if (isAppError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error("expected an AppError");
}

describe("registry", () => {
  it("looks up the bundled models and agents", () => {
    expect(defaultModel?.name).toBe("gpt-4o-mini");
    expect(modelByName("gpt-4o")?.modalities).toContain("image");
    expect(modelByName("nope")).toBeUndefined();
    expect(agentByName("assistant")?.memory_scopes).toContain("organization:acme");
    expect(errorOf(() => requireAgent("nobody")).code).toBe("BEM-047");
    expect(models.length).toBeGreaterThanOrEqual(8);
  });

  it("builds one router per env", () => {
    expect(routerFor(env)).toBe(routerFor(env));
  });

  it("without EDGEWEAVE_OFFLINE=1 the offline model never auto-routes, and only models with secrets do", () => {
    const prod = { OPENAI_API_KEY: "sk-x" };
    const r = routerFor(prod).resolve({ content: "hello" });
    expect(r.model.name).toBe("gpt-4o-mini");
    expect(r.candidates.map((m) => m.name)).toEqual(["gpt-4o-mini", "gpt-4o", "gpt-4o-audio-preview"]);
    const excluded = r.trace[0]!.excluded;
    expect(excluded).toContainEqual({ model: "offline-echo", reason: expect.stringContaining("EDGEWEAVE_OFFLINE=1") });
    expect(excluded).toContainEqual({ model: "claude-sonnet-4", reason: "secret ANTHROPIC_API_KEY is not set" });
    // Named explicitly, a model without its secret is still chosen (the provider reports BEM-070).
    expect(routerFor(prod).resolve({ content: "hello", model_override: "claude-3-5-haiku" }).model.name).toBe("claude-3-5-haiku");
    expect(errorOf(() => routerFor(prod).resolve({ content: "hello", model_override: "offline-echo" })).code).toBe("BEM-077");
  });

  it("an empty secret counts as missing; with no secrets at all BEM-041 says why", () => {
    const e = errorOf(() => routerFor({ OPENAI_API_KEY: "", EDGEWEAVE_OFFLINE: "0" }).resolve({ content: "hello" }));
    expect(e.code).toBe("BEM-041");
    expect(e.message).toContain("gpt-4o-mini (secret OPENAI_API_KEY is not set)");
    expect(e.message).toContain("default_model gpt-4o-mini fails too");
  });
});

describe("routeHeaders", () => {
  it("names the model and a header-safe reason", () => {
    const r = routerFor(env).resolve({ content: "hello" });
    const h = routeHeaders(r);
    expect(h["X-Edgeweave-Model"]).toBe("offline-echo");
    expect(h["X-Edgeweave-Route"]).toBe(r.reason);
    expect(() => new Headers(h)).not.toThrow();
  });

  it("replaces non-ASCII and bounds the length", () => {
    const m = routerFor(env).resolve({ content: "hello" }).model;
    const h = routeHeaders({ model: m, reason: `caf\u00e9 \u2014 ${"x".repeat(500)}\n` });
    expect(h["X-Edgeweave-Route"]).toMatch(/^caf\? \? x+\.\.\.$/);
    expect(h["X-Edgeweave-Route"].length).toBe(200);
    expect(() => new Headers(h)).not.toThrow();
  });
});
