// For merging branches cut before the structure moves (issue 12): rewrites relative imports that
// still point at a moved module to its new path, in src/, test/, bench/, scripts/ and examples/.
// Usage after `git merge <branch>`: tsx scripts/fix-moved-imports.ts   (prints each file it fixed)
// Safe to rerun; imports of modules that exist are left alone.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const moves: Record<string, string> = {
  "src/errors": "src/core/errors",
  "src/log": "src/core/log",
  "src/backoff": "src/core/backoff",
  "src/zod-issues": "src/core/zod-issues",
  "src/path-segment": "src/core/path-segment",
  "src/thread/message": "src/core/message",
  "src/memory/tokens": "src/core/tokens",
  "src/thread/ids": "src/core/ids",
  "src/auth/principal": "src/core/principal",
  "src/http/cursor": "src/core/cursor",
  "src/routing/model-config": "src/config/model-config",
  "src/pipeline/tool-names": "src/config/tool-names",
  "src/langgraph/checkpoint-store": "src/thread/langgraph-checkpoints",
  "src/langgraph/checkpoint-types": "src/thread/langgraph-checkpoint-types",
  "src/webhooks/run-delivery": "src/tasks/run-webhook",
  "src/routing/registry": "src/routing/bundled",
  "src/thread/registry": "src/thread/thread-list",
  "src/pipeline/middleware/registry": "src/pipeline/middleware/from-config",
  "src/pipeline/tool-registry": "src/pipeline/server-tools",
  "src/quotas": "src/auth/quotas",
};
const map = new Map(Object.entries(moves).map(([from, to]) => [join(root, from), join(root, to)]));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === "node_modules" || e.name.startsWith(".")) return [];
    const p = join(dir, e.name);
    return e.isDirectory() ? sources(p) : /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

const dirs = ["src", "test", "bench", "scripts", "examples"].map((d) => join(root, d)).filter(existsSync);
for (const file of dirs.flatMap(sources)) {
  const code = readFileSync(file, "utf8");
  const fixed = code.replace(/((?:from|import|import\()\s*["'])(\.{1,2}\/[^"']*)(["'])/g, (all, pre: string, spec: string, quote: string) => {
    const ext = /\.(ts|js)$/.exec(spec)?.[0] ?? "";
    const target = map.get(resolve(dirname(file), spec.slice(0, spec.length - ext.length)));
    if (!target) return all;
    const rel = relative(dirname(file), target);
    return pre + (rel.startsWith(".") ? rel : `./${rel}`) + ext + quote;
  });
  if (fixed !== code) {
    writeFileSync(file, fixed);
    console.log(`fixed ${relative(root, file)}`);
  }
}
