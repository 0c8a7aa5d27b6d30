// The dependency rule (.dependency-cruiser.cjs) checked over src/, type imports included.
// dependency-cruiser reads TypeScript only through the `typescript` package's JS API (<7);
// this repo runs TypeScript 7, which has none yet. So each module is first turned into
// JavaScript with Node's own type stripper — after making every type-only import a plain
// one, so the imports TypeScript would erase still count as edges — and dependency-cruiser
// checks that copy. Paths in its report are mapped back to the .ts sources.
// Usage: npm run check:deps   (exit 0 = no violations)
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

/** Type-only imports and re-exports as plain ones; `import("x")` in type positions as edges too. */
function keepTypeImports(code: string): string {
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
  const sources = tsFiles(join(root, "src"));
  for (const file of sources) {
    const js = stripTypeScriptTypes(keepTypeImports(readFileSync(file, "utf8")), { mode: "transform" });
    const target = join(out, relative(root, file)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, js);
  }
  // JSON out, so a module the cruise failed to read (a silent pass) is caught below.
  const args = ["src", "--config", join(root, ".dependency-cruiser.cjs"), "--output-type", "json"];
  // The same Node that runs this script (22), whatever `node` is first on PATH.
  const r = spawnSync(process.execPath, [join(root, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs"), ...args], {
    cwd: out,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (r.status === null || !r.stdout) throw new Error(`depcruise did not run: ${r.stderr}`);
  const result = JSON.parse(r.stdout) as {
    modules: { source: string; dependencies: unknown[] }[];
    summary: { violations: { from: string; to: string; cycle?: { name: string }[]; rule: { name: string } }[] };
  };
  const ts = (p: string) => p.replace(/\.js$/, ".ts");
  const seen = new Set(result.modules.map((m) => ts(m.source)));
  const unread = sources.map((f) => relative(root, f)).filter((f) => !seen.has(f));
  const violations = result.summary.violations;
  for (const v of violations) {
    const path = v.cycle ? [v.from, ...v.cycle.map((c) => c.name)].map(ts).join(" → ") : `${ts(v.from)} → ${ts(v.to)}`;
    console.error(`  ${v.rule.name}: ${path}`);
  }
  if (unread.length > 0) console.error(`  not read: ${unread.join(", ")}`);
  const ok = violations.length === 0 && unread.length === 0;
  console.log(`${ok ? "ok" : "FAIL"} check:deps: ${seen.size} modules, ${violations.length} violations (.dependency-cruiser.cjs)`);
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
