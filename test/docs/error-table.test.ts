import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import errorsDoc from "../../docs/reference/errors.md?raw";
import { END, findSection, renderErrorTable, START, withSection } from "../../scripts/error-table-render";
import { catalog } from "../../src/core/errors";
import { authHeaders, createTenant, OPERATOR_KEY } from "../support/tenants";

describe("the error code table of docs/reference/errors.md", () => {
  it("matches src/core/errors.ts (run `npm run docs:errors` when this fails)", () => {
    expect(findSection(errorsDoc), "docs/reference/errors.md has the errors:start/errors:end markers").not.toBeNull();
    expect(findSection(errorsDoc)).toBe(renderErrorTable(catalog));
  });

  it("is what the worker answers: each code provoked here comes with the status the table gives it", async () => {
    const documented = new Map([...errorsDoc.matchAll(/^\| `(BEM-\d{3})` \| (\d{3}) \|/gm)].map(([, code, status]) => [code!, Number(status)]));
    const t = await createTenant();
    const json = { "content-type": "application/json" };
    const cases: [string, string, RequestInit][] = [
      ["BEM-002", "/v1/no-such-route", { headers: authHeaders(t.adminKey) }],
      ["BEM-003", "/v1/models", { method: "PUT", headers: authHeaders(t.adminKey) }],
      ["BEM-010", "/v1/memory/facts", { method: "POST", headers: authHeaders(t.adminKey), body: "{" }],
      ["BEM-011", "/v1/memory/facts", { method: "POST", headers: authHeaders(t.adminKey), body: "{}" }],
      ["BEM-012", "/v1/memory/facts", { method: "POST", headers: { ...authHeaders(t.adminKey), "content-type": "text/plain" }, body: "{}" }],
      ["BEM-013", "/v1/memory/facts", { method: "POST", headers: authHeaders(t.adminKey), body: JSON.stringify({ text: "x".repeat(70_000) }) }],
      ["BEM-020", "/v1/models", { headers: json }],
      ["BEM-021", "/v1/models", { headers: authHeaders("ew_not-a-key-anyone-holds") }],
      ["BEM-022", "/v1/admin/tenants", { method: "POST", headers: authHeaders(t.memberKey), body: "{}" }],
      ["BEM-036", "/v1/threads/no-such-thread/state", { headers: authHeaders(t.adminKey) }],
      ["BEM-049", "/v1/models/no-such-model", { headers: authHeaders(t.adminKey) }],
      ["BEM-051", "/v1/admin/tenants/no-such-tenant/keys", { headers: authHeaders(OPERATOR_KEY) }],
    ];
    for (const [code, path, init] of cases) {
      const res = await exports.default.fetch(`http://x${path}`, init);
      const body = (await res.json()) as { error: { code: string } };
      expect(body.error.code, `${init.method ?? "GET"} ${path}`).toBe(code);
      expect(res.status, code).toBe(documented.get(code));
    }
  });

  it("keeps a meaning containing a pipe inside its cell", () => {
    const table = renderErrorTable({ "BEM-999": { status: 400, meaning: "a | b" } });
    expect(table).toContain("| `BEM-999` | 400 | a \\| b |");
  });

  it("replaces only the section, and appends it once when the markers are absent", () => {
    const text = fc.string().filter((s) => !s.includes(START) && !s.includes(END));
    fc.assert(
      fc.property(text, text, text, (before, old, after) => {
        const section = renderErrorTable(catalog);
        const doc = `${before}${START}${old}${END}${after}`;
        const updated = withSection(doc, section);
        expect(updated).toBe(`${before}${section}${after}`);
        expect(withSection(updated, section)).toBe(updated);

        const appended = withSection(before, section);
        expect(appended.endsWith(`${section}\n`)).toBe(true);
        expect(findSection(appended)).toBe(section);
        expect(withSection(appended, section)).toBe(appended);
      }),
    );
  });
});
