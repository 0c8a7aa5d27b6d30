import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("app shell", () => {
  it("answers health", async () => {
    const res = await exports.default.fetch("http://x/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });
  it("unknown routes get the coded error shape", async () => {
    const res = await exports.default.fetch("http://x/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "BEM-002", message: expect.any(String) } });
  });
  it("serves an OpenAPI 3.1 document", async () => {
    const res = await exports.default.fetch("http://x/openapi.json");
    const doc = (await res.json()) as { openapi: string };
    expect(doc.openapi).toBe("3.1.0");
  });
});
