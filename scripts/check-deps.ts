// The dependency rule (.dependency-cruiser.cjs) checked over src/, type imports included.
// dependency-cruiser reads TypeScript only through the `typescript` package's JS API (<7);
// this repo runs TypeScript 7, which has none yet. So each module is first turned into
// JavaScript with Node's own type stripper — after making every type-only import a plain
// one, so the imports TypeScript would erase still count as edges — and dependency-cruiser
// checks that copy. Paths in its report are mapped back to the .ts sources.
// Usage: tsx scripts/check-deps.ts [depcruise options, e.g. --output-type err-long]
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

/** Type-only imports and re-exports as plain ones; `import("x")` in type positions as edges too. */
export function keepTypeImports(code: string): string {
  const typeQueries = [...code.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)].map((m) => `import "${m[1]}";`);
  const plain = code
    .replace(/^(\s*)import\s+type\s+/gm, "$1import ")
    .replace(/^(\s*)export\s+type\s+(\{[^}]*\}\s*from)/gm, "$1export $2")
    .replace(/^(\s*)export\s+type\s+\*/gm, "$1export *");
  return [plain, ...typeQueries].join("\n");
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

const out = mkdtempSync(join(tmpdir(), "edgeweave-deps-"));
try {
  for (const file of tsFiles(join(root, "src"))) {
    const js = stripTypeScriptTypes(keepTypeImports(readFileSync(file, "utf8")), { mode: "transform" });
    const target = join(out, relative(root, file)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, js);
  }
  const args = ["src", "--config", join(root, ".dependency-cruiser.cjs"), "--output-type", "err", ...process.argv.slice(2)];
  const r = spawnSync(join(root, "node_modules/.bin/depcruise"), args, { cwd: out, encoding: "utf8" });
  const text = (s: string) => s.replace(/(src\/[\w./-]+)\.js\b/g, "$1.ts");
  process.stdout.write(text(r.stdout));
  process.stderr.write(text(r.stderr));
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
