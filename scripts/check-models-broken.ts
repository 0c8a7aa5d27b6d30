// The build step itself must refuse bad model files: runs the real compiler
// (scripts/compile-models.ts) as a child process on broken copies and checks
// each exits non-zero with the right code, file and line on stderr.
// Usage: tsx scripts/check-models-broken.ts   (exit 0 = every case refused as expected)
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const cases = [
  { file: "test/routing/fixtures/broken.yaml", expect: "BEM-044 test/routing/fixtures/broken.yaml:10: models[1].provider:" },
  { file: "test/routing/fixtures/duplicate.yaml", expect: "BEM-042 test/routing/fixtures/duplicate.yaml:5: models[1].name:" },
  { file: "test/routing/fixtures/literal-key.yaml", expect: "BEM-048 test/routing/fixtures/literal-key.yaml:5:" },
  { file: "test/routing/fixtures/does-not-exist.yaml", expect: "BEM-043 test/routing/fixtures/does-not-exist.yaml:" },
];

const dir = mkdtempSync(join(tmpdir(), "edgeweave-models-"));
let failed = 0;
for (const c of cases) {
  // Output goes to a scratch path so a wrongly accepted file cannot replace the real module.
  const out = join(dir, "out.ts");
  const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/compile-models.ts", c.file, "--out", out], { encoding: "utf8" });
  const ok = r.status !== 0 && r.status !== null && r.stderr.includes(c.expect) && !existsSync(out);
  if (!ok) {
    failed++;
    console.error(`FAIL ${c.file}: expected a non-zero exit with "${c.expect}"; got exit ${r.status}\n${r.stderr}`);
  } else {
    console.log(`ok   ${c.file}: exit ${r.status}, ${r.stderr.trim().split("\n")[0]}`);
  }
}
rmSync(dir, { recursive: true, force: true });
process.exitCode = failed === 0 ? 0 : 1;
