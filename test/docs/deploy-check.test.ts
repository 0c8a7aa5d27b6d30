import { describe, expect, it } from "vitest";
import shipped from "../../wrangler.toml?raw";
import { deployProblems } from "../../scripts/deploy-check";

// Issue 24.13: `wrangler deploy --dry-run` accepts the placeholder database_id, so a missed edit
// showed only at the real deploy. `npm run deploy` refuses it first.
describe("npm run deploy refuses what only a real deploy would reject", () => {
  it("the shipped wrangler.toml's placeholder database_id is refused, with what to do", () => {
    const problems = deployProblems(shipped);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/database_id of DB is the placeholder/);
    expect(problems[0]).toContain("npx wrangler d1 create edgeweave");
  });

  it("a real id passes, and so does a file without D1", () => {
    const real = shipped.replace(/database_id = "[^"]*"/, 'database_id = "4f1b2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"');
    expect(deployProblems(real)).toEqual([]);
    expect(deployProblems('name = "x"\nmain = "src/index.ts"\n')).toEqual([]);
  });

  it("an empty or missing id is refused too", () => {
    expect(deployProblems(shipped.replace(/database_id = "[^"]*"/, 'database_id = ""'))[0]).toMatch(/database_id of DB is empty/);
    expect(deployProblems(shipped.replace(/database_id = "[^"]*"\n/, ""))[0]).toMatch(/DB has no database_id/);
  });
});
