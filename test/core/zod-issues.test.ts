import { z } from "zod";
import { describe, expect, it } from "vitest";
import { describeIssues } from "../../src/core/zod-issues";

describe("describeIssues: the one formatter for zod issues in error messages", () => {
  const Body = z.object({ name: z.string(), tags: z.array(z.string()).max(1), n: z.number() });
  const issues = (v: unknown) => {
    const r = Body.safeParse(v);
    if (r.success) throw new Error("expected a failure");
    return r.error.issues;
  };

  it("lists path: message joined with '; ', a root for top-level issues, at most `limit`", () => {
    const all = describeIssues(issues({ name: 1, tags: ["a"], n: "x" })).split("; ");
    expect(all.map((line) => line.split(":")[0])).toEqual(["name", "n"]);
    expect(describeIssues(issues({ name: "a", tags: [2], n: 1 }))).toMatch(/^tags\.0: /);
    expect(describeIssues(issues("nope"), { root: "(body)" })).toMatch(/^\(body\): /);
    expect(describeIssues(issues({ name: 1, tags: ["a", "b"], n: "x" }), { limit: 1 }).split("; ")).toHaveLength(1);
  });

  it("takes a prefix and a suffix per issue", () => {
    expect(describeIssues(issues({ name: "a", tags: [], n: "x" }), { prefix: "context.", suffix: " (needed by todo_list)" })).toMatch(
      /^context\.n: .+ \(needed by todo_list\)$/,
    );
  });
});
