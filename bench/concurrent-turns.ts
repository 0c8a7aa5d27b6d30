// Issue 36: a turn at 8 connections against its floor, like for like. One or more checkouts of edgeweave and the
// stored floor (bench/passthrough/worker.ts `/object-stored`: the rate-limit call, one RPC, the thread's 1,000
// messages and the question sent upstream, as `/object-context`; and the storage a turn does: a recall through an
// FTS5 index and a window read from an indexed log, the turn's rows written in one transaction, one D1 statement;
// its rows read and written per turn are printed) on the same platform config (edgeweave's
// [assets] router in front, minified: bench/passthrough/wrangler.platform.toml; with BENCH_NO_ASSETS=1 both without
// it). Each side gets 8 threads of 1,000 messages; rounds of 8 connections × LANE turns alternate between the
// sides (the order rotated every round) and every request's latency is kept. Prints each side's 8-thread p50, req/s
// and CPU per turn (its `wrangler dev` processes' user + system time over the round's turns: at 8 connections a turn
// waits on the CPU, so the p50 ratio follows this), and each checkout's ratios to the floor: pooled p50, the median
// of the per-round p50 ratios, throughput, CPU per turn.
// With BENCH_PROFILE=1 one more round per side runs under V8's sampling profiler (the worker's isolate, where the
// Worker and its thread objects run in `wrangler dev`): CPU per turn and the top self-time functions, per side.
// Ports (the brief's): the floor and its inspector on BENCH_PORT, +1 (default 8900), checkout i on +2+2i, +3+2i;
// the fake Ollama on 11434 as in every turn bench, so run it under `flock /tmp/edgeweave-bench.lock`.
//   npx tsx bench/concurrent-turns.ts [checkout=.] [checkout…]     # BENCH_ROUNDS=6 BENCH_LANE=25 BENCH_PROFILE=1 BENCH_NO_MINIFY=1
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { formatTop, profiled, summarise } from "./support/cpu-profile.ts";
import { startEdgeweave } from "./support/edgeweave-dev.ts";
import { startFakeOllama } from "./support/fake-ollama-server.ts";
import { groupCpuMs } from "./support/process-cpu.ts";
import { json, THREAD_SEED } from "./support/turn-setup.ts";
import { percentile, startWranglerDev } from "./support/wrangler-dev.ts";

const CHECKOUTS = process.argv.length > 2 ? process.argv.slice(2) : ["."];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const LANE = Number(process.env.BENCH_LANE ?? 25);
const CONNECTIONS = 8;
const PORT = Number(process.env.BENCH_PORT ?? 8900);
const NO_ASSETS = process.env.BENCH_NO_ASSETS === "1";
const TOP = Number(process.env.BENCH_TOP ?? 20);

type Side = { name: string; inspector: number; group: number | undefined; turn(lane: number): Promise<unknown> };
/** Every request's latency, sorted; req/s; CPU milliseconds the side's `wrangler dev` (workerd) used per turn. */
type Round = { ms: number[]; rps: number; cpu: number };

/** CONNECTIONS lanes at once, each LANE turns on its own thread; every request's latency. */
async function round(side: Side): Promise<Round> {
  const ms: number[] = [];
  const cpu0 = side.group === undefined ? Number.NaN : groupCpuMs(side.group);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, lane) => {
      for (let i = 0; i < LANE; i++) {
        const s = performance.now();
        await side.turn(lane);
        ms.push(performance.now() - s);
      }
    }),
  );
  const rps = ms.length / ((performance.now() - t0) / 1000);
  const cpu = side.group === undefined ? Number.NaN : (groupCpuMs(side.group) - cpu0) / ms.length;
  return { ms: ms.sort((a, b) => a - b), rps, cpu };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const r2 = (x: number) => +x.toFixed(2);

async function main() {
  const load = [loadavg()[0]!];
  const upstream = await startFakeOllama();
  const persist = mkdtempSync(join(tmpdir(), "ew-conc-floor-"));
  const stops: (() => Promise<void>)[] = [];
  try {
    const floorDev = await startWranglerDev({
      config: NO_ASSETS ? "bench/passthrough/wrangler.toml" : "bench/passthrough/wrangler.platform.toml",
      persistTo: persist,
      readyPath: "/",
      port: PORT,
      inspectorPort: PORT + 1,
    });
    stops.push(() => floorDev.stop());
    const floorBody = { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false };
    const floor: Side = {
      name: "floor",
      inspector: PORT + 1,
      group: floorDev.group,
      turn: (lane) => json(`${floorDev.url}/object-stored?thread=fc-${lane}`, { body: floorBody }),
    };
    const sides: Side[] = [floor];
    for (const [i, dir] of CHECKOUTS.entries()) {
      const ew = await startEdgeweave(dir, { noAssets: NO_ASSETS, port: PORT + 2 + 2 * i, inspectorPort: PORT + 3 + 2 * i, configName: "wrangler.conc.toml" });
      stops.push(() => ew.done());
      for (let lane = 0; lane < CONNECTIONS; lane++) await ew.seedThread(`conc-${lane}`);
      sides.push({ name: dir, inspector: PORT + 3 + 2 * i, group: ew.group, turn: (lane) => ew.turn(`conc-${lane}`) });
    }
    for (let lane = 0; lane < CONNECTIONS; lane++) await json(`${floorDev.url}/object-stored-seed?thread=fc-${lane}`, { body: THREAD_SEED });
    for (const s of sides) await round(s); // warm-up: compiled code, caches, each thread object loaded
    const rounds = sides.map(() => [] as Round[]);
    for (let r = 0; r < ROUNDS; r++)
      for (let k = 0; k < sides.length; k++) {
        const j = (r + k) % sides.length;
        rounds[j]!.push(await round(sides[j]!));
      }
    load.push(loadavg()[0]!);
    // The floor's SQLite rows per turn, as its cursors counted them over every turn so far (warm-up included).
    const stored = { turns: 0, read: 0, written: 0 };
    for (let lane = 0; lane < CONNECTIONS; lane++) {
      const c = (await (await fetch(`${floorDev.url}/object-stored-counts?thread=fc-${lane}`)).json()) as typeof stored;
      stored.turns += c.turns;
      stored.read += c.read;
      stored.written += c.written;
    }
    const pooled = rounds.map((rs) => rs.flatMap((x) => x.ms).sort((a, b) => a - b));
    const floorP50 = percentile(pooled[0]!, 50);
    const floorRps = median(rounds[0]!.map((x) => x.rps));
    const floorCpu = median(rounds[0]!.map((x) => x.cpu));
    const result = {
      date: new Date().toISOString(),
      machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}`,
      load_avg_1m: { start: r2(load[0]!), end: r2(load[1]!) },
      platform: NO_ASSETS ? "bare (BENCH_NO_ASSETS=1)" : "edgeweave's ([assets] router, minify)",
      connections: CONNECTIONS,
      rounds: ROUNDS,
      turns_per_round: CONNECTIONS * LANE,
      floor: {
        p50: r2(floorP50),
        p99: r2(percentile(pooled[0]!, 99)),
        rps: r2(floorRps),
        cpu_ms_per_turn: r2(floorCpu),
        round_p50: rounds[0]!.map((x) => r2(percentile(x.ms, 50))),
        round_cpu: rounds[0]!.map((x) => r2(x.cpu)),
        sqlite_rows_per_turn: { read: r2(stored.read / stored.turns), written: r2(stored.written / stored.turns) },
        d1_statements_per_turn: 1,
      },
      edgeweave: sides.slice(1).map((s, i) => {
        const rs = rounds[i + 1]!;
        const p50 = percentile(pooled[i + 1]!, 50);
        return {
          checkout: s.name,
          p50: r2(p50),
          p99: r2(percentile(pooled[i + 1]!, 99)),
          rps: r2(median(rs.map((x) => x.rps))),
          cpu_ms_per_turn: r2(median(rs.map((x) => x.cpu))),
          round_p50: rs.map((x) => r2(percentile(x.ms, 50))),
          round_cpu: rs.map((x) => r2(x.cpu)),
          p50_ratio: +(p50 / floorP50).toFixed(3),
          // Round r of this side against round r of the floor, which ran next to it.
          p50_ratio_paired_median: +median(rs.map((x, r) => percentile(x.ms, 50) / percentile(rounds[0]![r]!.ms, 50))).toFixed(3),
          throughput_ratio: +(median(rs.map((x) => x.rps)) / floorRps).toFixed(3),
          cpu_ratio: +(median(rs.map((x) => x.cpu)) / floorCpu).toFixed(3),
        };
      }),
    };
    console.log(`BENCH concurrent-turns ${JSON.stringify(result)}`);
    const mark = (ok: boolean) => (ok ? "✔" : "✘");
    for (const e of result.edgeweave)
      console.log(
        `TARGETS ${e.checkout}: 8-thread p50 ${e.p50} ms vs floor ${result.floor.p50} ms → ${e.p50_ratio}× (paired ${e.p50_ratio_paired_median}×; ≤ 1.25 ${mark(e.p50_ratio <= 1.25)}), ` +
          `${e.rps} vs ${result.floor.rps} req/s → ${e.throughput_ratio}×, CPU ${e.cpu_ms_per_turn} vs ${result.floor.cpu_ms_per_turn} ms/turn → ${e.cpu_ratio}× (load ${result.load_avg_1m.start}→${result.load_avg_1m.end})`,
      );
    if (process.env.BENCH_PROFILE === "1") {
      for (const [j, s] of sides.entries()) {
        let turns = 0;
        const t0 = performance.now();
        const profile = await profiled(s.inspector, async () => {
          turns = (await round(s)).ms.length;
        });
        const wall = performance.now() - t0;
        const p = summarise(profile, TOP);
        const out = join(tmpdir(), `concurrent-turns-${j}.cpuprofile`);
        writeFileSync(out, JSON.stringify(profile));
        console.log(
          `PROFILE ${s.name}: ${turns} turns at ${CONNECTIONS} connections, wall ${wall.toFixed(0)} ms, isolate busy ${p.busy.toFixed(0)} ms = ` +
            `${(p.busy / turns).toFixed(3)} ms CPU/turn (${((100 * p.busy) / wall).toFixed(0)}% of wall; ${out})\n-- top self time\n${formatTop(p.self, turns, p.busy)}\n` +
            `-- top total time\n${formatTop(p.total, turns, p.busy)}`,
        );
      }
    }
  } finally {
    for (const stop of stops.reverse()) await stop();
    await upstream.close();
    rmSync(persist, { recursive: true, force: true });
  }
}

await main();
