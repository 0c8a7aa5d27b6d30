// First-run setup for `npm start`: local secrets from the example file (never overwriting),
// then the local D1 migrations.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example (local secrets; not committed).");
}

// wrangler asks "About to apply N migration(s)… (Y/n)" when stdin is a terminal; applying
// migrations to the local database is what `npm start` is for, so stdin is not a terminal
// here and wrangler takes its default (yes) without stopping.
const wrangler = join("node_modules", ".bin", process.platform === "win32" ? "wrangler.cmd" : "wrangler");
const migrate = spawnSync(wrangler, ["d1", "migrations", "apply", "DB", "--local"], {
  stdio: ["ignore", "inherit", "inherit"],
  shell: process.platform === "win32",
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);
