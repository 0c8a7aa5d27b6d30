// `npm run deploy`: `wrangler deploy` (any flag after `--`), unless wrangler.toml still holds what
// only a real deploy would reject (scripts/deploy-check.ts). A dry run (`-- --dry-run`) is not checked:
// `npm test`'s check:deploy builds the shipped file as it is.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { deployProblems } from "./deploy-check";

const args = process.argv.slice(2);
const configAt = args.findIndex((a) => a === "--config" || a === "-c");
const config = configAt >= 0 ? args[configAt + 1]! : "wrangler.toml";
if (!args.includes("--dry-run")) {
  const problems = deployProblems(readFileSync(config, "utf8"));
  if (problems.length > 0) {
    for (const p of problems) console.error(`✘ ${p}`);
    console.error("Not deployed. (See docs/operations/deploying.md.)");
    process.exit(1);
  }
}
const wrangler = join("node_modules", ".bin", process.platform === "win32" ? "wrangler.cmd" : "wrangler");
const run = spawnSync(wrangler, ["deploy", ...args], { stdio: "inherit", shell: process.platform === "win32" });
process.exit(run.status ?? 1);
