// Issue 36's growth load: does a turn slow down as the work piles up? 8 threads of 1,000 messages each and 10
// facts (bench/support/turn-setup.ts, the zero-latency fake Ollama, `wrangler dev` on loopback), then ten rounds
// of 6 s at 8 connections with autocannon, one after another, each connection asking the same question on its own
// thread as the turn-latency bench does. Prints each round's p50, req/s and the turns so far, and the last three
// rounds against rounds 1–3 (round 0 warms up): p50 ratio (target ≤ 1.1) and throughput ratio (≥ 0.9).
// Ports: edgeweave, the pass-through and their inspectors on BENCH_PORT..BENCH_PORT+3 (default 8840); the fake
// Ollama on 11434 as in every turn bench, so run it under `flock /tmp/edgeweave-bench.lock`.
//   npx tsx bench/growth.ts [rounds=10] [seconds=6]
import { cpus, loadavg } from "node:os";
import autocannon from "autocannon";
import { startTurnBench, turnBody } from "./support/turn-setup.ts";

const ROUNDS = Number(process.argv[2] ?? 10);
const SECONDS = Number(process.argv[3] ?? 6);
const CONNECTIONS = 8;
const PORT = Number(process.env.BENCH_PORT ?? 8840);
/** The whole run is bounded: set-up, the rounds, and a margin for a stalled server. */
const DEADLINE_MS = 5 * 60_000 + ROUNDS * SECONDS * 2_000;

type Round = { round: number; turnsSoFar: number; p50: number; p99: number; rps: number };

/** One round: CONNECTIONS connections, each posting turns on its own thread for SECONDS. */
async function round(url: string, key: string, threads: readonly string[]): Promise<autocannon.Result> {
  let next = 0;
  const result = await autocannon({
    url: `${url}/v1/chat/completions`,
    method: "POST",
    connections: CONNECTIONS,
    duration: SECONDS,
    timeout: 30,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    setupClient: (client) => client.setBody(JSON.stringify(turnBody(threads[next++ % threads.length]!))),
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`round failed: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result;
}

async function main() {
  const bench = await startTurnBench({ ports: { edgeweave: PORT, passthrough: PORT + 1, inspectors: [PORT + 2, PORT + 3] } });
  const deadline = setTimeout(() => {
    console.error(`bench/growth.ts: over ${DEADLINE_MS / 1000} s, stopping`);
    void bench.stop().finally(() => process.exit(2));
  }, DEADLINE_MS);
  const load = [loadavg()[0]!];
  try {
    const threads = Array.from({ length: CONNECTIONS }, (_, i) => `growth-${i}`);
    for (const t of threads) await bench.seedThread(t);
    const rounds: Round[] = [];
    let turns = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const res = await round(bench.ew.url, bench.key, threads);
      turns += res["2xx"];
      rounds.push({ round: r, turnsSoFar: turns, p50: res.latency.p50, p99: res.latency.p99, rps: res.requests.average });
      console.log(`round ${r}: ${turns} turns so far, p50 ${res.latency.p50} ms, p99 ${res.latency.p99} ms, ${res.requests.average.toFixed(1)} req/s`);
    }
    load.push(loadavg()[0]!);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = rounds.slice(1, 4);
    const last = rounds.slice(-3);
    const p50Ratio = mean(last.map((x) => x.p50)) / mean(first.map((x) => x.p50));
    const rpsRatio = mean(last.map((x) => x.rps)) / mean(first.map((x) => x.rps));
    const result = {
      date: new Date().toISOString(),
      machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}`,
      load_avg_1m: { start: +load[0]!.toFixed(2), end: +load[1]!.toFixed(2) },
      threads: CONNECTIONS,
      connections: CONNECTIONS,
      seconds_per_round: SECONDS,
      rounds,
      p50_ratio_last3_vs_rounds_1_3: +p50Ratio.toFixed(2),
      throughput_ratio_last3_vs_rounds_1_3: +rpsRatio.toFixed(2),
    };
    console.log(`BENCH growth ${JSON.stringify(result)}`);
    const mark = (ok: boolean) => (ok ? "✔" : "✘");
    console.log(
      `TARGETS load ${result.load_avg_1m.start}→${result.load_avg_1m.end}; last three rounds vs rounds 1–3: ` +
        `p50 ${result.p50_ratio_last3_vs_rounds_1_3}× (≤ 1.1 ${mark(p50Ratio <= 1.1)}), throughput ${result.throughput_ratio_last3_vs_rounds_1_3}× (≥ 0.9 ${mark(rpsRatio >= 0.9)})`,
    );
  } finally {
    await bench.stop();
    clearTimeout(deadline);
  }
}

await main();
