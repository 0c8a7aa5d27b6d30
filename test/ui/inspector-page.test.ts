import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { INSPECTOR_HTML, INSPECTOR_ICON } from "../../src/ui/page";
import { INSPECTOR_JS } from "../../src/ui/script";
import { INSPECTOR_CSS } from "../../src/ui/style";

const get = (path: string) => exports.default.fetch(`http://x${path}`);

describe("GET /ui (thread inspector)", () => {
  it.each([
    ["/ui", "text/html", INSPECTOR_HTML],
    ["/ui/", "text/html", INSPECTOR_HTML],
    ["/ui/inspector.js", "text/javascript", INSPECTOR_JS],
    ["/ui/inspector.css", "text/css", INSPECTOR_CSS],
    ["/ui/favicon.svg", "image/svg+xml", INSPECTOR_ICON],
  ])("serves %s without a key, under a same-origin CSP", async (path, type, body) => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain(type);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp.split(";").map((d) => d.trim())).toEqual(expect.arrayContaining(["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"]));
    expect(csp).not.toContain("unsafe");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await res.text()).toBe(body);
  });

  it("loads only its own script and stylesheet: no inline code, no other origin", () => {
    const scripts = [...INSPECTOR_HTML.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => m[1]?.trim())).toEqual(['src="/ui/inspector.js" defer']);
    expect(scripts.every((m) => m[2] === "")).toBe(true);
    expect(INSPECTOR_HTML).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
    for (const text of [INSPECTOR_HTML, INSPECTOR_JS, INSPECTOR_CSS]) expect(text).not.toMatch(/https?:\/\/|\/\/cdn|@import/);
  });

  it("writes data to the page only as text", () => {
    expect(INSPECTOR_JS).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    // The key is kept in sessionStorage only.
    expect(INSPECTOR_JS).not.toMatch(/localStorage|document\.cookie/);
    expect(INSPECTOR_JS).toContain("sessionStorage");
    expect(INSPECTOR_JS).toContain('authorization: "Bearer " + key');
    expect(INSPECTOR_JS).toContain('credentials: "omit"');
  });

  it("still needs a key for the API it calls", async () => {
    const res = await get("/v1/threads");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-020");
  });
});
