// `npm run bench`: every benchmark in one go, one after another (they share 2 cores), with the
// figures each prints. Bounded: each step has its own time limit and the whole run stays < 10 min.
import { spawnSync } from "node:child_process";
import { cpus, loadavg } from "node:os";

// biome-ignore lint/suspicious/noControlCharactersInRegex: matches ANSI colour codes (ESC [ … m)
const ANSI = /\x1b\[[0-9;]*m/g;

const steps: { name: string; cmd: string[]; limitS: number; env?: Record<string, string> }[] = [
  { name: "routing (resolve, 1,000 models; YAML compile)", cmd: ["tsx", "bench/routing-resolve.ts"], limitS: 120 },
  { name: "thread (bytes per turn; newest-window load)", cmd: ["vitest", "run", "-c", "bench/thread-vitest.config.ts"], limitS: 180 },
  {
    name: "memory (loadContext at 100 vs 100,000 messages; ranked loading; fact search vs other tenants' facts); a turn with traces on vs off",
    cmd: ["vitest", "run", "-c", "bench/memory-vitest.config.ts"],
    limitS: 300,
  },
  { name: "trim (10,000 messages vs @langchain/core)", cmd: ["tsx", "bench/trim-messages.ts"], limitS: 240, env: { BENCH_SLOW_RUNS: "3" } },
  { name: "turn latency (wrangler dev vs pass-through)", cmd: ["tsx", "bench/turn-latency.ts", "200"], limitS: 420 },
  { name: "latency model (modelled deployment: round trips, added ms)", cmd: ["vitest", "run", "-c", "bench/latency-vitest.config.ts"], limitS: 300 },
  {
    name: "langgraph (calls and stored bytes per turn, 100 turns, vs MemorySaver)",
    cmd: ["vitest", "run", "-c", "bench/langgraph-vitest.config.ts"],
    limitS: 240,
  },
];

console.log(`edgeweave benchmarks — ${new Date().toISOString()} — ${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}, node ${process.version}`);
let failed = 0;
for (const step of steps) {
  const t0 = Date.now();
  console.log(`\n## ${step.name}\n$ npx ${step.cmd.join(" ")}`);
  const r = spawnSync("npx", step.cmd, { encoding: "utf8", timeout: step.limitS * 1000, env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...step.env } });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  // The figures: the BENCH lines and the bench scripts' own tables, without test-runner noise.
  const figures = out
    .split("\n")
    .filter(
      (l) =>
        /BENCH |median|ratio|p50|compile|max_tokens|machine|kept|goal/i.test(l) &&
        !/^\s*(✓|RUN|Test Files|Tests|Duration|Start at)/.test(l.replace(ANSI, "").trim()),
    );
  console.log(figures.map((l) => l.replace(ANSI, "")).join("\n") || out.slice(-2000));
  if (r.status !== 0) {
    failed++;
    console.log(`!! ${step.name} exited ${r.status ?? r.signal}`);
  }
  console.log(
    `(${((Date.now() - t0) / 1000).toFixed(0)} s; load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")})`,
  );
}
process.exit(failed === 0 ? 0 : 1);
