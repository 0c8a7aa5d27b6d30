import fc from "fast-check";
import { describe, expect, it } from "vitest";
import errorsDoc from "../../docs/reference/errors.md?raw";
import { END, findSection, renderErrorTable, START, withSection } from "../../scripts/error-table-render";
import { catalog } from "../../src/core/errors";

describe("the error code table of docs/reference/errors.md", () => {
  it("matches src/core/errors.ts (run `npm run docs:errors` when this fails)", () => {
    expect(findSection(errorsDoc), "docs/reference/errors.md has the errors:start/errors:end markers").not.toBeNull();
    expect(findSection(errorsDoc)).toBe(renderErrorTable(catalog));
  });

  it("has one row per code, with its status and meaning", () => {
    const rows = renderErrorTable(catalog)
      .split("\n")
      .filter((l) => l.startsWith("| `BEM-"));
    expect(rows).toHaveLength(Object.keys(catalog).length);
    expect(rows).toContain("| `BEM-036` | 404 | Thread not found |");
    const codes = rows.map((r) => r.slice(3, 10));
    expect(codes).toEqual([...codes].sort());
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
