// `npm start`: local secrets from the example file (never overwriting), the local D1 migrations,
// then `wrangler dev` — quietly, so the URL is easy to find. Every argument goes to `wrangler dev`
// (`npm start -- --port 8788`); `--verbose` (`npm run start:verbose`) shows wrangler's whole log:
// the migration tables, the build, the bindings table.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const argv = process.argv.slice(2);
const verbose = argv.includes("--verbose");
const args = argv.filter((a) => a !== "--verbose");

/** The value of a `wrangler dev` flag given as `--name value` or `--name=value`. */
function flag(name: string): string | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  const a = args[i]!;
  return a.includes("=") ? a.slice(a.indexOf("=") + 1) : args[i + 1];
}

if (flag("--env-file") === undefined && !existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example (local secrets; not committed).");
}

const wrangler = join("node_modules", ".bin", process.platform === "win32" ? "wrangler.cmd" : "wrangler");
const shell = process.platform === "win32";
// Quiet unless asked: no telemetry notice, no fetch of Request.cf from workers.cloudflare.com
// (it fails offline and edgeweave reads no `cf` field), no cron reminder (the banner says it).
const env = verbose ? process.env : { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", ...process.env };

// wrangler asks "About to apply N migration(s)… (Y/n)" when stdin is a terminal; applying
// migrations to the local database is what `npm start` is for, so stdin is not a terminal
// here and wrangler takes its default (yes) without stopping. Its per-migration tables are
// kept for a failure (or --verbose).
const persist = flag("--persist-to");
const migrate = spawnSync(wrangler, ["d1", "migrations", "apply", "DB", "--local", ...(persist ? ["--persist-to", persist] : [])], {
  stdio: ["ignore", verbose ? "inherit" : "pipe", verbose ? "inherit" : "pipe"],
  encoding: "utf8",
  env,
  shell,
});
if (migrate.status !== 0) {
  if (!verbose) process.stderr.write(`${migrate.stdout ?? ""}${migrate.stderr ?? ""}`);
  console.error("Applying the local D1 migrations failed (above).");
  process.exit(migrate.status ?? 1);
}
if (!verbose) {
  const applied = (migrate.stdout.match(/About to apply (\d+) migration/) ?? [])[1];
  console.log(applied ? `Applied ${applied} local D1 migration(s).` : "Local D1 database is up to date.");
}

// wrangler runs the same build ([build] in wrangler.toml), but below --log-level warn a models.yaml
// mistake would sit in a stack dump; built here first, its own message is all that shows.
if (!verbose) {
  const build = spawnSync(process.platform === "win32" ? "npm.cmd" : "npm", ["run", "--silent", "build:worker"], { encoding: "utf8", env, shell });
  if (build.status !== 0) {
    process.stderr.write(`${build.stdout ?? ""}${build.stderr ?? ""}`);
    console.error("The build failed (above): fix it and run npm start again.");
    process.exit(build.status ?? 1);
  }
}

const port = flag("--port") ?? "8787";
const host = flag("--ip") ?? "localhost";
const devArgs = ["dev", ...(flag("--port") ? [] : ["--port", port]), ...(verbose ? [] : ["--log-level", "warn", "--test-scheduled"]), ...args];
console.log(verbose ? "Starting wrangler dev…" : "Building and starting wrangler dev (quiet; npm run start:verbose for its whole log)…");
const dev: ChildProcess = spawn(wrangler, devArgs, { stdio: "inherit", env, shell });
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => dev.kill(sig));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 130 : 1)));

const base = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
const started = Date.now();
async function announce(): Promise<void> {
  while (dev.exitCode === null && Date.now() - started < 180_000) {
    const ok = await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) {
      console.log(
        [
          "",
          `  edgeweave is running at ${base}`,
          `    ${base}/ui     the thread inspector     ${base}/docs   the API reference`,
          `    operator key: OPERATOR_KEY in ${flag("--env-file") ?? ".dev.vars"} (dev-operator-key from the example); docs/getting-started.md starts there`,
          `    the hourly fact purge runs only when asked: curl ${base}/cdn-cgi/local/scheduled`,
          "    Ctrl-C stops it.",
          "",
        ].join("\n"),
      );
      return;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}
void announce();
