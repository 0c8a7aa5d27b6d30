import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createTenant } from "../support/tenants";

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

describe("wrong method on a real route", () => {
  it("is 405 BEM-003 with an Allow header, not 404 (after auth, like every /v1 route)", async () => {
    const { memberKey } = await createTenant();
    const auth = { authorization: `Bearer ${memberKey}` };
    const put = await exports.default.fetch("http://x/v1/models", { method: "PUT", headers: auth });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET");
    expect(((await put.json()) as { error: { code: string } }).error.code).toBe("BEM-003");
    const patch = await exports.default.fetch("http://x/v1/threads/t-1", { method: "PATCH", headers: auth });
    expect(patch.status).toBe(405);
    expect(patch.headers.get("allow")).toBe("DELETE");
    const health = await exports.default.fetch("http://x/health", { method: "POST" });
    expect(health.status).toBe(405);
  });
});
