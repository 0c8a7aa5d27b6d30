// Starts `wrangler dev` on loopback for a benchmark or an end-to-end test, and stops it.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** `group`: the process group `wrangler dev` and its workerd run in (bench/support/process-cpu.ts reads their CPU time). */
export type DevServer = { url: string; group: number | undefined; stop(): Promise<void> };

/** Runs `wrangler dev` with the given config and vars; resolves once it answers HTTP. */
export async function startWranglerDev(opts: {
  config?: string;
  vars?: Record<string, string>;
  persistTo?: string;
  readyPath?: string;
  inspectorPort?: number;
  /** A port of the caller's (default: any free one). */
  port?: number;
  /** The checkout to run (default: this one); `config` is relative to it. */
  cwd?: string;
}): Promise<DevServer> {
  const port = opts.port ?? (await freePort());
  const args = [
    "wrangler",
    "dev",
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--inspector-port",
    String(opts.inspectorPort ?? (await freePort())),
    "--log-level",
    "warn",
  ];
  if (opts.config) args.push("--config", opts.config);
  // Readable function names in a CPU profile (BENCH_NO_MINIFY=1); timings are taken minified, as deployed.
  if (process.env.BENCH_NO_MINIFY) args.push("--minify=false");
  if (opts.persistTo) args.push("--persist-to", opts.persistTo);
  for (const [k, v] of Object.entries(opts.vars ?? {})) args.push("--var", `${k}:${v}`);
  const child: ChildProcess = spawn("npx", args, {
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    detached: true,
  });
  let log = "";
  child.stdout?.on("data", (d) => (log += d));
  child.stderr?.on("data", (d) => (log += d));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  };
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${log.slice(-3000)}`);
    try {
      const res = await fetch(url + (opts.readyPath ?? "/health"));
      if (res.status < 500) return { url, group: child.pid, stop };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`wrangler dev did not start in 90 s:\n${log.slice(-3000)}`);
}

/** Runs a command to completion; rejects on a non-zero exit with its output. */
export function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...env } });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(" ")} exited ${code}:\n${out.slice(-3000)}`))));
  });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

/** Milliseconds `fn` took. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}
