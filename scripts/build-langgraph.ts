/**
 * Builds the package edgeweave/langgraph (langgraph/) from src/langgraph-client: ES modules into
 * langgraph/dist/esm, CommonJS into langgraph/dist/cjs (marked "type": "commonjs"), with types.
 * The output is committed, so installing the package from git needs no build step (and fetches no
 * compiler); scripts/check-langgraph-pack.ts fails when it is out of date.
 * Usage: npm run build:langgraph [-- <out dir>]   (default: langgraph/dist)
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

export function buildLangGraph(out = join(root, "langgraph", "dist")): void {
  rmSync(out, { recursive: true, force: true });
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  for (const [config, dir] of [
    ["tsconfig.json", "esm"],
    ["tsconfig.cjs.json", "cjs"],
  ] as const) {
    execFileSync(process.execPath, [tsc, "-p", join(root, "langgraph", config), "--outDir", join(out, dir)], { stdio: "inherit" });
  }
  mkdirSync(join(out, "cjs"), { recursive: true });
  writeFileSync(join(out, "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
}

if (import.meta.main) buildLangGraph(process.argv[2] ? resolve(process.argv[2]) : undefined);
