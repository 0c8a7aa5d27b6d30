// Two builds of edgeweave in the same run, against the context floor (bench/passthrough/worker.ts
// `/object-context`): both under `wrangler dev` at once, each with its own local state, the same 1,000-message
// thread and 10 facts as bench/turn-latency.ts; sequential turns interleaved A, B, floor, then 8-thread
// rounds alternating A, B, floor (median of 3). On a shared machine a change's before/after only means
// something measured like this: the ratio to the floor moves with the machine's load between runs.
//   git worktree add --detach /tmp/ew-before <commit>; ln -s "$PWD/node_modules" /tmp/ew-before/node_modules
//   npx tsx bench/compare-builds.ts /tmp/ew-before . [turns=60]     # CMP_NO_ASSETS_B=1: B without the [assets] layer
// Prints one `CMP` line: each build's p50 and its ratio to the floor's, its 8-thread req/s and ratio.
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startEdgeweave } from "./support/edgeweave-dev.ts";
import { startFakeOllama } from "./support/fake-ollama-server.ts";
import { json, THREAD_SEED } from "./support/turn-setup.ts";
import { percentile, startWranglerDev, timed } from "./support/wrangler-dev.ts";

const [A, B] = [process.argv[2]!, process.argv[3]!];
const TURNS = Number(process.argv[4] ?? 60);
const LANE = 25;
const seed = THREAD_SEED;

async function main() {
  const load0 = loadavg()[0]!;
  const upstream = await startFakeOllama();
  const ptPersist = mkdtempSync(join(tmpdir(), "pt-cmp-"));
  const [a, b] = [await startEdgeweave(A), await startEdgeweave(B, { noAssets: process.env.CMP_NO_ASSETS_B === "1" })];
  const pt = await startWranglerDev({ config: "bench/passthrough/wrangler.toml", persistTo: ptPersist, readyPath: "/" });
  try {
    const floorBody = { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false };
    const floor = (t: string) => json(`${pt.url}/object-context?thread=${t}`, { body: floorBody });
    await json(`${pt.url}/object-seed?thread=fc`, { body: seed });
    await a.seedThread("t");
    await b.seedThread("t");
    for (let i = 0; i < 20; i++) {
      await a.turn("t");
      await b.turn("t");
      await floor("fc");
    }
    const xa: number[] = [];
    const xb: number[] = [];
    const xf: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      xa.push(await timed(() => a.turn("t")));
      xb.push(await timed(() => b.turn("t")));
      xf.push(await timed(() => floor("fc")));
    }
    for (const x of [xa, xb, xf]) x.sort((p, q) => p - q);
    const lanes = Array.from({ length: 8 }, (_, i) => `c-${i}`);
    for (const l of lanes) {
      await a.seedThread(l);
      await b.seedThread(l);
      await json(`${pt.url}/object-seed?thread=${l}`, { body: seed });
    }
    const rate = async (one: (lane: string) => Promise<unknown>) => {
      const t0 = performance.now();
      await Promise.all(
        lanes.map(async (l) => {
          for (let i = 0; i < LANE; i++) await one(l);
        }),
      );
      return (lanes.length * LANE) / ((performance.now() - t0) / 1000);
    };
    await rate(a.turn);
    await rate(b.turn);
    const ra: number[] = [];
    const rb: number[] = [];
    const rf: number[] = [];
    for (let r = 0; r < 3; r++) {
      ra.push(await rate(a.turn));
      rb.push(await rate(b.turn));
      rf.push(await rate(floor));
    }
    const med = (x: number[]) => [...x].sort((p, q) => p - q)[1]!;
    const p50 = (x: number[]) => +percentile(x, 50).toFixed(2);
    const out = {
      load: [+load0.toFixed(2), +loadavg()[0]!.toFixed(2)],
      a: { p50: p50(xa), ratio: +(percentile(xa, 50) / percentile(xf, 50)).toFixed(2), rps: +med(ra).toFixed(1), tratio: +(med(ra) / med(rf)).toFixed(2) },
      b: { p50: p50(xb), ratio: +(percentile(xb, 50) / percentile(xf, 50)).toFixed(2), rps: +med(rb).toFixed(1), tratio: +(med(rb) / med(rf)).toFixed(2) },
      floor: { p50: p50(xf), rps: +med(rf).toFixed(1) },
      rounds: { a: ra.map((x) => +x.toFixed(1)), b: rb.map((x) => +x.toFixed(1)), floor: rf.map((x) => +x.toFixed(1)) },
      upstream: upstream.calls(),
    };
    console.log(`CMP ${A} vs ${B} ${JSON.stringify(out)}`);
  } finally {
    await a.done();
    await b.done();
    await pt.stop();
    await upstream.close();
    rmSync(ptPersist, { recursive: true, force: true });
  }
}

await main();
