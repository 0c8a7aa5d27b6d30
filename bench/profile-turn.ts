// Issue 13 item 3: where a stateful turn's CPU goes. Same set-up as bench/turn-latency.ts
// (1,000-message threads, 10 facts, zero-latency upstream, `wrangler dev`); the V8 sampling
// profiler of the edgeweave isolate (Worker and thread objects share it) runs over TURNS
// turns sent by CONCURRENCY threads at once, then the top self-time and total-time functions
// are printed and the .cpuprofile is written for DevTools.
//   npx tsx bench/profile-turn.ts [turns=200] [concurrency=8]     # BENCH_PROFILE_OUT=path.cpuprofile
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { json, startTurnBench, turnBody } from "./support/turn-setup.ts";
import { freePort } from "./support/wrangler-dev.ts";

const TURNS = Number(process.argv[2] ?? 200);
const CONCURRENCY = Number(process.argv[3] ?? 8);
const TOP = Number(process.env.BENCH_TOP ?? 25);
const OUT = process.env.BENCH_PROFILE_OUT ?? "/tmp/edgeweave-turn.cpuprofile";

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type Profile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

/** A Chrome DevTools protocol session over the inspector's websocket. */
async function devtools(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string; title?: string }[];
  const target = targets[0];
  if (!target) throw new Error("no inspector target");
  // wrangler's inspector proxy wants a local Origin; Node's (undici's) WebSocket takes headers as its second argument.
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { origin: "http://localhost" } } as unknown as string[]);
  await new Promise((ok, fail) => {
    ws.onopen = ok;
    ws.onerror = fail;
  });
  let next = 1;
  const pending = new Map<number, (v: unknown) => void>();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; error?: unknown };
    if (msg.id !== undefined) pending.get(msg.id)?.(msg.error ? Promise.reject(new Error(JSON.stringify(msg.error))) : msg.result);
  };
  return {
    send: <T>(method: string, params: Record<string, unknown> = {}) =>
      new Promise<T>((ok) => {
        const id = next++;
        pending.set(id, ok as (v: unknown) => void);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

const where = (f: CallFrame) => `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(src|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;

/** Self and total milliseconds per function (a function counted once per sample however deep it recurses). */
function summarise(p: Profile) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  let idle = 0;
  p.samples.forEach((id, i) => {
    const ms = (p.timeDeltas[i + 1] ?? 0) / 1000;
    const node = byId.get(id)!;
    all += ms;
    if (node.callFrame.functionName === "(idle)") idle += ms;
    self.set(where(node.callFrame), (self.get(where(node.callFrame)) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = where(byId.get(at)!.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + ms);
    }
  });
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  return { all, idle, self: top(self), total: top(total) };
}

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
    const dt = await devtools(inspectorPort);
    await dt.send("Profiler.enable");
    await dt.send("Profiler.setSamplingInterval", { interval: 100 });
    await dt.send("Profiler.start");
    const load = loadavg()[0]!;
    const t0 = performance.now();
    await lanes(TURNS);
    const wall = performance.now() - t0;
    const { profile } = await dt.send<{ profile: Profile }>("Profiler.stop");
    dt.close();
    writeFileSync(OUT, JSON.stringify(profile));
    const s = summarise(profile);
    const busy = s.all - s.idle;
    const fmt = ([k, ms]: [string, number]) => `${(ms / TURNS).toFixed(3).padStart(8)} ms/turn ${((100 * ms) / busy).toFixed(1).padStart(5)}%  ${k}`;
    console.log(
      `PROFILE turns=${TURNS} concurrency=${CONCURRENCY} wall=${wall.toFixed(0)} ms load_avg_1m=${load.toFixed(2)} isolate busy=${busy.toFixed(0)} ms (${(busy / TURNS).toFixed(2)} ms/turn) idle=${s.idle.toFixed(0)} ms; profile: ${OUT}`,
    );
    console.log(`-- top self time (% of busy)\n${s.self.map(fmt).join("\n")}`);
    console.log(`-- top total time (% of busy)\n${s.total.map(fmt).join("\n")}`);
  } finally {
    await bench.stop();
  }
}

await main();
