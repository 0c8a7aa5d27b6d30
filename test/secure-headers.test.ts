import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

const get = (path: string, headers: Record<string, string> = {}) => exports.default.fetch(`http://x${path}`, { headers });

describe("headers on every response (Hono's requestId and secureHeaders)", () => {
  it.each(["/health", "/v1/threads", "/no-such-route", "/ui", "/openapi.json"])("%s: a request id and the security headers, errors included", async (path) => {
    const res = await get(path);
    await res.arrayBuffer();
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("strict-transport-security")).toContain("max-age=");
  });

  it("the request id is ours: Cloudflare's ray id when present, never one the client sends", async () => {
    const chosen = await get("/health", { "x-request-id": "client-chosen-id" });
    expect(chosen.headers.get("x-request-id")).not.toBe("client-chosen-id");
    const ray = await get("/health", { "cf-ray": "8f1e2d3c4b5a6978-AMS" });
    expect(ray.headers.get("x-request-id")).toBe("8f1e2d3c4b5a6978-AMS");
  });
});
