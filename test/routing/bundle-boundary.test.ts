/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";

// The YAML parser is build-time only: runtime code reads models.generated.ts.
// The options object is cast only for the type checker; Vite reads the literal.
const sources = import.meta.glob("../../src/**/*.ts", { query: "?raw", import: "default", eager: true } as { eager: true }) as unknown as Record<
  string,
  string
>;
const BUILD_TIME = new Set(["../../src/routing/yaml-loader.ts", "../../src/routing/compile.ts"]);
const IMPORTS_BUILD_TIME = /from\s+["'](yaml|[./]+(routing\/)?(yaml-loader|compile))["']/;

describe("worker bundle boundary", () => {
  it("sees the source tree", () => {
    expect(Object.keys(sources)).toContain("../../src/routing/router.ts");
  });

  it("no runtime module imports the YAML parser or the loader", () => {
    const offenders = Object.entries(sources)
      .filter(([path, text]) => !BUILD_TIME.has(path) && IMPORTS_BUILD_TIME.test(text))
      .map(([path]) => path);
    expect(offenders).toEqual([]);
  });
});
