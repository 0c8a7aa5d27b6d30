import { describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import { ACCESS_END, ACCESS_START, accessSection, POLICY } from "../../src/auth/policy";

describe("README access table", () => {
  it("is POLICY as it is in the code (run `npx tsx scripts/access-table.ts` when this fails)", () => {
    const start = readme.indexOf(ACCESS_START);
    const end = readme.indexOf(ACCESS_END, start);
    expect(start, "README.md has the access:start marker").toBeGreaterThanOrEqual(0);
    expect(readme.slice(start, end + ACCESS_END.length)).toBe(accessSection());
  });

  it("has one row per action", () => {
    const rows = accessSection()
      .split("\n")
      .filter((l) => l.startsWith("| `"));
    expect(rows.map((r) => r.slice(3, r.indexOf("`", 3)))).toEqual(Object.keys(POLICY));
  });
});
