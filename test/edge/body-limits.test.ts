import { env, exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { BODY_LIMITS, jsonDepth, jsonItems, MAX_JSON_DEPTH, MAX_JSON_ITEMS, parseGuardedJson } from "../../src/edge/limits";
import { isAppError } from "../../src/core/errors";
import { appRoutes, declaredFor } from "../support/routes";
import { api, createTenant, type TestTenant } from "../support/tenants";

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});

type Send = { body?: BodyInit; contentType?: string | null; contentLength?: boolean };

/** One route per group, each with the limit it should enforce. */
const routes = () => [
  { name: "chat", path: "/v1/chat/completions", limit: BODY_LIMITS.conversation },
  { name: "invoke", path: "/v1/invoke", limit: BODY_LIMITS.conversation },
  { name: "thread state", path: "/v1/threads/limits-th/state", limit: BODY_LIMITS.conversation },
  { name: "route", path: "/v1/route", limit: BODY_LIMITS.conversation },
  { name: "memory facts", path: "/v1/memory/facts", limit: BODY_LIMITS.small },
  { name: "memory tasks", path: "/v1/memory/tasks", limit: BODY_LIMITS.small },
  { name: "admin keys", path: `/v1/admin/tenants/${t.tenant}/keys`, limit: BODY_LIMITS.small },
  { name: "webhook registration", path: "/v1/webhooks", limit: BODY_LIMITS.small },
];

function send(path: string, s: Send): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${t.adminKey}` };
  if (s.contentType !== null) headers["content-type"] = s.contentType ?? "application/json";
  return exports.default.fetch(`http://x${path}`, { method: "POST", headers, body: s.body });
}

async function expectCode(res: Response, status: number, code: string) {
  const body = (await res.json()) as { error?: { code: string } };
  expect([res.status, body.error?.code]).toEqual([status, code]);
}

/** Rows a rejected request could have written for the tenant. */
async function footprint(): Promise<number[]> {
  const tables = ["facts", "api_keys", "webhooks", "threads", "usage"];
  return Promise.all(
    tables.map(async (tb) => (await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${tb} WHERE tenant_id = ?`).bind(t.tenant).first<{ n: number }>())!.n),
  );
}

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const stream = (bytes: Uint8Array) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += 65_536) c.enqueue(bytes.slice(i, i + 65_536));
      c.close();
    },
  });

describe("limits on every route group, before parsing; nothing stored", () => {
  it("rejects each kind of bad body with its code and leaves storage unchanged", async () => {
    const before = await footprint();
    for (const r of routes()) {
      const over = new TextEncoder().encode(JSON.stringify({ pad: "x".repeat(r.limit) }));
      await expectCode(await send(r.path, { body: over }), 413, "BEM-013");
      // No Content-Length: the cap applies to the bytes actually read.
      await expectCode(await send(r.path, { body: stream(over) }), 413, "BEM-013");
      await expectCode(await send(r.path, { body: '{"a":1}', contentType: "text/plain" }), 415, "BEM-012");
      await expectCode(await send(r.path, { body: '{"a":1}', contentType: null }), 415, "BEM-012");
      await expectCode(await send(r.path, { body: '{"a":' }), 400, "BEM-010");
      await expectCode(await send(r.path, { body: new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) }), 400, "BEM-010");
      await expectCode(await send(r.path, { body: "" }), 400, "BEM-010");
      await expectCode(await send(r.path, { body: nested(MAX_JSON_DEPTH + 1) }), 400, "BEM-014");
      await expectCode(await send(r.path, { body: JSON.stringify({ a: Array(MAX_JSON_ITEMS).fill(0) }) }), 400, "BEM-014");
    }
    expect(await footprint()).toEqual(before);
  });

  it("bodies within the limits reach the route's own validation", async () => {
    for (const r of routes()) {
      for (const body of [nested(MAX_JSON_DEPTH), JSON.stringify(Array(MAX_JSON_ITEMS).fill(0)), JSON.stringify({ pad: "x".repeat(r.limit - 20) })]) {
        const res = await send(r.path, { body });
        // The route itself answers (BEM-011, BEM-035 for state updates, 200 for the lenient /v1/route), never the guard.
        expect(res.status, r.name).toBeLessThan(500);
        const answer = (await res.json()) as { error?: { code: string } };
        expect(["BEM-010", "BEM-012", "BEM-013", "BEM-014"], r.name).not.toContain(answer.error?.code);
      }
    }
  });

  it("a valid body with a JSON media type variant is accepted", async () => {
    const res = await send("/v1/memory/facts", {
      body: JSON.stringify({ scope: "organization:lim", kind: "note", text: "ok" }),
      contentType: "application/json; charset=utf-8",
    });
    expect(res.status).toBe(201);
  });

  it("limits per group, declared on each route", async () => {
    const limit = (method: string, path: string) => BODY_LIMITS[declaredFor(method, path)!.body];
    expect(limit("POST", "/v1/chat/completions")).toBe(1024 * 1024);
    expect(limit("POST", "/v1/invoke")).toBe(1024 * 1024);
    expect(limit("POST", "/v1/threads/{id}/state")).toBe(1024 * 1024);
    expect(limit("POST", "/v1/webhooks/{id}")).toBe(256 * 1024);
    expect(limit("POST", "/v1/webhooks")).toBe(64 * 1024);
    expect(limit("POST", "/v1/memory/facts")).toBe(64 * 1024);
    expect(limit("POST", "/v1/admin/tenants")).toBe(64 * 1024);
    // Routes that take no body declare none, so any body is refused before it is read. The one
    // exception is LangGraph's store API, whose DELETE carries {namespace, key} in its body.
    const bodied = new Set(["DELETE /v1/langgraph/store/items"]);
    for (const r of appRoutes().filter((r) => (r.method === "GET" || r.method === "DELETE") && !bodied.has(`${r.method} ${r.path}`)))
      expect(r.declared?.body, `${r.method} ${r.path}`).toBe("none");
    expect(declaredFor("DELETE", "/v1/langgraph/store/items")?.body).toBe("conversation");
    // A path no route serves has no limit of its own: it is a 404 (after the key check).
    expect((await api("/v1/invoker", { key: t.adminKey, body: {} })).status).toBe(404);
  });
});

describe("JSON guard (pure)", () => {
  const realDepth = (v: unknown): number =>
    typeof v === "object" && v !== null ? 1 + Math.max(0, ...(Array.isArray(v) ? v : Object.values(v)).map(realDepth)) : 0;
  const realItems = (v: unknown): number =>
    typeof v === "object" && v !== null
      ? (Array.isArray(v) ? v : Object.values(v)).reduce((n: number, c) => n + realItems(c), Array.isArray(v) ? v.length : Object.keys(v).length)
      : 0;

  it("depth counted on the text equals the parsed value's depth (brackets inside strings ignored)", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        const text = JSON.stringify(v);
        expect(jsonDepth(text)).toBe(realDepth(v));
        expect(jsonItems(v)).toBe(realItems(v));
      }),
      { seed: 3, numRuns: 300 },
    );
    expect(jsonDepth('{"a":"[[[\\"{{"}')).toBe(1);
  });

  it("every input gets a value or a coded 400, never anything else", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.string().map((s) => nested(40) + s),
        ),
        (text) => {
          try {
            parseGuardedJson(text);
          } catch (e) {
            expect(isAppError(e) && ["BEM-010", "BEM-014"].includes(e.code)).toBe(true);
          }
        },
      ),
      { seed: 5, numRuns: 500 },
    );
  });

  it("a very deep document is refused without being parsed", () => {
    const deep = nested(500_000);
    expect(() => parseGuardedJson(deep)).toThrow(expect.objectContaining({ code: "BEM-014" }));
  });
});
