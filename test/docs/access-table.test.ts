import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import accessDoc from "../../docs/reference/access.md?raw";
import { ACCESS_END, ACCESS_START, accessSection } from "../../src/auth/policy";
import { appRoutes } from "../support/routes";
import { authHeaders, createTenant, OPERATOR_KEY } from "../support/tenants";

describe("docs/reference/access.md's access table", () => {
  it("is POLICY as it is in the code (run `npm run docs:access` when this fails)", () => {
    const start = accessDoc.indexOf(ACCESS_START);
    const end = accessDoc.indexOf(ACCESS_END, start);
    expect(start, "docs/reference/access.md has the access:start marker").toBeGreaterThanOrEqual(0);
    expect(accessDoc.slice(start, end + ACCESS_END.length)).toBe(accessSection());
  });

  // The table as a reader sees it: action → the cell of each role.
  const ROLES = ["operator", "admin", "member"] as const;
  const documented = new Map(
    accessDoc
      .split("\n")
      .filter((l) => l.startsWith("| `"))
      .map((l) => {
        const cells = l.split(" | ").map((c) => c.replace(/^\| |\s*\|$/g, "").trim());
        const action = cells[0]!.replaceAll("`", "");
        // Cells: action, what, operator, tenant admin, member, webhook.
        const byRole = Object.fromEntries(ROLES.map((r, i) => [r, cells.at(-4 + i)!]));
        return [action, byRole as Record<(typeof ROLES)[number], string>];
      }),
  );

  it("is what the routes do: a role the table says `no` to gets 403 BEM-022 on every route of that action, a `yes` never does", async () => {
    const t = await createTenant({ memberScopes: ["*"] });
    const keys = { operator: OPERATOR_KEY, admin: t.adminKey, member: t.memberKey };
    const checked: string[] = [];
    for (const { method, path, declared } of appRoutes()) {
      const row = declared && documented.get(declared.access);
      if (!row) continue; // public, signed, or an action the table has no yes/no for
      // Placeholders for path parameters: the role check comes before anything reads them.
      const url = `http://x${path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, (_m, name: string) => (name === "t" ? t.tenant : `doc-${name}`))}`;
      for (const role of ROLES) {
        const cell = row[role];
        if (cell !== "no" && cell !== "yes") continue;
        const res = await exports.default.fetch(url, {
          method,
          headers: authHeaders(keys[role]),
          body: method === "GET" || method === "DELETE" ? undefined : "{}",
        });
        const text = await res.text();
        // Anthropic's shape (the Messages routes) carries the code as bem_code.
        const error = res.status === 403 ? (JSON.parse(text) as { error?: { code?: string; bem_code?: string } }).error : undefined;
        const code = error?.bem_code ?? error?.code;
        const where = `${role} on ${method} ${path} (${declared.access}: ${cell})`;
        if (cell === "no") expect(code, where).toBe("BEM-022");
        else expect(code, where).not.toBe("BEM-022");
        checked.push(where);
      }
    }
    // Every yes/no cell of the roles above was exercised on at least one route.
    for (const [action, row] of documented)
      for (const role of ROLES)
        if (row[role] === "no" || row[role] === "yes")
          expect(
            checked.some((w) => w.startsWith(`${role} on `) && w.includes(`(${action}: `)),
            `${role} × ${action}`,
          ).toBe(true);
  });
});
