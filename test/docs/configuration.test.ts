import { describe, expect, it } from "vitest";
import configuration from "../../docs/reference/configuration.md?raw";
import limits from "../../docs/operations/limits.md?raw";
import shipped from "../../wrangler.toml?raw";

/** The names wrangler.toml ships: its [vars] and its [[ratelimits]] bindings. */
const vars = [...(/^\[vars\]\n([\s\S]*?)^\[/m.exec(shipped)?.[1] ?? "").matchAll(/^([A-Z][A-Z0-9_]*) = /gm)].map((m) => m[1]!);
const ratelimits = [...shipped.matchAll(/^\[\[ratelimits\]\]\nname = "([A-Z0-9_]+)"/gm)].map((m) => m[1]!);

describe("docs/reference/configuration.md", () => {
  it("names every [vars] entry and rate limiter wrangler.toml ships (it or docs/operations/limits.md)", () => {
    expect(vars.length).toBeGreaterThan(10);
    expect(ratelimits.length).toBeGreaterThan(4);
    const docs = `${configuration}\n${limits}`;
    expect([...vars, ...ratelimits].filter((name) => !docs.includes(`\`${name}\``))).toEqual([]);
  });

  it("documents as [vars] or [[ratelimits]] only what wrangler.toml has there", () => {
    const rows = configuration.split("\n").filter((l) => /^\| `[A-Z]/.test(l));
    const claimed = rows.flatMap((row) => {
      const [names, where] = row.split(" | ");
      const kind = where?.trim();
      if (kind !== "`[vars]`" && kind !== "`[[ratelimits]]`") return [];
      return [...names!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => ({ name: m[1]!, kind }));
    });
    expect(claimed.length).toBeGreaterThan(10);
    expect(claimed.filter(({ name, kind }) => !(kind === "`[vars]`" ? vars : ratelimits).includes(name))).toEqual([]);
  });
});
