// Issue 13 item 3: where a stateful turn's CPU goes. Same set-up as bench/turn-latency.ts
// (1,000-message threads, 10 facts, zero-latency upstream, `wrangler dev`); the V8 sampling
// profiler of the edgeweave isolate (Worker and thread objects share it) runs over TURNS
// turns sent by CONCURRENCY threads at once, then the top self-time and total-time functions
// are printed and the .cpuprofile is written for DevTools.
//   npx tsx bench/profile-turn.ts [turns=200] [concurrency=8]     # BENCH_PROFILE_OUT=path.cpuprofile
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { json, startTurnBench, turnBody } from "./support/turn-setup.ts";
import { formatTop, profiled, summarise } from "./support/cpu-profile.ts";
import { freePort } from "./support/wrangler-dev.ts";

const TURNS = Number(process.argv[2] ?? 200);
const CONCURRENCY = Number(process.argv[3] ?? 8);
const TOP = Number(process.env.BENCH_TOP ?? 25);
const OUT = process.env.BENCH_PROFILE_OUT ?? "/tmp/edgeweave-turn.cpuprofile";

async function main() {
  const inspectorPort = await freePort();
  const bench = await startTurnBench({ inspectorPort });
  const { ew, key } = bench;
  try {
    const threads = Array.from({ length: CONCURRENCY }, (_, i) => `profile-${i}`);
    for (const t of threads) await bench.seedThread(t);
    const turn = (t: string) => json(`${ew.url}/v1/chat/completions`, { key, body: turnBody(t) });
    const lanes = async (n: number) => {
      let left = n;
      await Promise.all(
        threads.map(async (t) => {
          while (left-- > 0) await turn(t);
        }),
      );
    };
    await lanes(40); // warm-up: compiled code, caches
    const load = loadavg()[0]!;
    const t0 = performance.now();
    const profile = await profiled(inspectorPort, () => lanes(TURNS));
    const wall = performance.now() - t0;
    writeFileSync(OUT, JSON.stringify(profile));
    const s = summarise(profile, TOP);
    console.log(
      `PROFILE turns=${TURNS} concurrency=${CONCURRENCY} wall=${wall.toFixed(0)} ms load_avg_1m=${load.toFixed(2)} isolate busy=${s.busy.toFixed(0)} ms (${(s.busy / TURNS).toFixed(2)} ms/turn) idle=${s.idle.toFixed(0)} ms; profile: ${OUT}`,
    );
    console.log(`-- top self time (% of busy)\n${formatTop(s.self, TURNS, s.busy)}`);
    console.log(`-- top total time (% of busy)\n${formatTop(s.total, TURNS, s.busy)}`);
  } finally {
    await bench.stop();
  }
}

await main();
