import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { lanes } from "../../src/ui/lanes";

// How the worker serves the inspector. What the page does is driven in a browser by
// test/e2e/inspector.e2e.ts (npm run test:e2e, in .ci/run).
const get = (path: string, headers: Record<string, string> = {}) => exports.default.fetch(`http://x${path}`, { headers });

describe("GET /ui (thread inspector)", () => {
  it.each([
    ["/ui", "text/html"],
    ["/ui/", "text/html"],
    ["/ui/inspector.js", "text/javascript"],
    ["/ui/inspector.css", "text/css"],
    ["/ui/favicon.svg", "image/svg+xml"],
  ])("serves %s from the static assets without a key, under a same-origin CSP", async (path, type) => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain(type);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp.split(";").map((d) => d.trim())).toEqual(
      expect.arrayContaining(["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]),
    );
    expect(csp).not.toContain("unsafe");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect((await res.text()).length).toBeGreaterThan(0);
  });

  it("the page loads only its own bundled script and stylesheet: no inline code, no other origin", async () => {
    const html = await (await get("/ui")).text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => m[1]?.trim())).toEqual(['src="/ui/inspector.js" defer']);
    expect(scripts.every((m) => m[2] === "")).toBe(true);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|https?:\/\//i);
  });

  it("serves only the inspector's files: the source and other paths are 404", async () => {
    for (const path of ["/ui/index.html", "/ui/inspector.ts", "/ui/lanes.js", "/index.html"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
    }
  });

  it("answers a revalidation with 304 when the file is unchanged", async () => {
    const first = await get("/ui/inspector.js");
    const etag = first.headers.get("etag");
    expect(etag).toBeTruthy();
    await first.arrayBuffer();
    const again = await get("/ui/inspector.js", { "if-none-match": etag! });
    expect(again.status).toBe(304);
  });

  it("still needs a key for the API it calls", async () => {
    const res = await get("/v1/threads");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-020");
  });
});

describe("the inspector's branch lanes", () => {
  const cp = (id: string, parent_id: string | null, created_at: number) => ({ id, parent_id, created_at, step: created_at });

  it("a first child continues its parent's lane; a later child of the same parent opens a new one", () => {
    // a ← b ← c, and a fork d from a; e continues d.
    const { lane, children } = lanes([cp("e", "d", 5), cp("d", "a", 4), cp("c", "b", 3), cp("b", "a", 2), cp("a", null, 1)]);
    expect(Object.fromEntries(lane)).toEqual({ a: 0, b: 0, c: 0, d: 1, e: 1 });
    expect(children.get("a")).toEqual(["b", "d"]);
  });
});
