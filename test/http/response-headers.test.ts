import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { setOnResponse } from "../../src/http/response-headers";

describe("setOnResponse: a header set after the handler answered", () => {
  const app = new Hono();
  app.use(async (c, next) => {
    await next();
    setOnResponse(c, "x-request-id", "rid");
    setOnResponse(c, "vary", "Origin", true);
  });
  app.get("/built", (c) => c.json({ ok: true }, 200, { vary: "Accept" }));
  // Response.redirect's headers are immutable (fetch's "immutable" guard), as a fetch() response's are.
  app.get("/immutable", () => Response.redirect("https://example.com/next", 302));

  it("lands on a response Hono built, appended where asked", async () => {
    const res = await app.request("/built");
    expect(res.headers.get("x-request-id")).toBe("rid");
    expect(res.headers.get("vary")).toBe("Accept, Origin");
    expect(await res.json()).toEqual({ ok: true });
  });

  it("lands on a response whose headers are immutable (a copy of it)", async () => {
    const res = await app.request("/immutable");
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("https://example.com/next");
    expect(res.headers.get("x-request-id")).toBe("rid");
    expect(res.headers.get("vary")).toBe("Origin");
  });
});
