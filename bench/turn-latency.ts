// Issue 5 benchmark: latency of a stateful chat turn through `wrangler dev` (1,000-message
// thread, 10 facts) against a bare pass-through worker forwarding to the same zero-latency
// upstream, interleaved in the same run; then throughput with 8 threads at once against the
// pass-through at the same concurrency; then a streamed turn's time to first byte against the
// pass-through streaming. A second baseline, the pass-through carrying the same 1,000-message
// context edgeweave sends the model, separates edgeweave's own cost from moving the context. A third,
// the floor (bench/passthrough/worker.ts: one Durable Object RPC and one SQLite write, with and
// without a rate-limit call, and with the thread's 1,000 messages sent to the model), is what
// `wrangler dev` charges any design that runs the turn in the thread's object before that design
// does any work of its own. The context floor runs twice: as issue 23 set it (bench/passthrough/wrangler.toml,
// a bare worker) and on edgeweave's own platform config (wrangler.platform.toml: the same [assets] block with
// run_worker_first, minify, nodejs_compat), which `wrangler dev` serves through its asset router as it does
// edgeweave. Edgeweave's p50 and 8-thread throughput are reported against both, labelled (`TARGETS` line).
// Two agents added to the build for the run, alike but for `recall: false`, each on its own 1,000-message thread,
// give issue 23's turn path without recall (recall has its own budget against `recall: false`, issue 21) and
// recall's cost in the same run.
// The dense channel's cost (issue 33) is measured on realistic text as well: the same two agents, one recalling by
// words and meaning (shipped) and one by words alone, each on a thread of 1,000 LoCoMo messages, asked LoCoMo's
// questions (LOCOMO_DIR as bench/locomo; left out when the data is absent).
// Run: npx tsx bench/turn-latency.ts [turns]
//   BENCH_ONLY=dense: only the dense on/off pair on realistic text (and the filler threads' pair), no floors.
//   BENCH_PORT=n: edgeweave on n, the pass-through on n+1, their inspectors on n+2 and n+3 (default: any free ones).
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConversations, locomoDir } from "./locomo/data.ts";
import { json, startTurnBench, turnBody, type TurnBench } from "./support/turn-setup.ts";
import { percentile, timed } from "./support/wrangler-dev.ts";

const TURNS = Number(process.argv[2] ?? 200);
const WARMUP = 20;
const CONCURRENCY = 8;
const CONC_PER_LANE = Number(process.env.BENCH_CONC_TURNS ?? 25);
const STREAM_TURNS = Number(process.env.BENCH_STREAM_TURNS ?? 100);
const ONLY_DENSE = process.env.BENCH_ONLY === "dense";
const PORT = process.env.BENCH_PORT ? Number(process.env.BENCH_PORT) : undefined;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** 1,000 messages of LoCoMo's conversations in order, and their questions; undefined without the data. */
function locomoText(): { messages: { role: string; content: string }[]; questions: string[] } | undefined {
  let convs: ReturnType<typeof loadConversations>;
  try {
    convs = loadConversations(locomoDir(ROOT));
  } catch {
    return undefined;
  }
  const messages = convs
    .flatMap((c) => c.turns.map((t) => ({ role: t.speaker === c.speakerA ? "user" : "assistant", content: `${t.speaker}: ${t.text}` })))
    .slice(0, 1000);
  const questions = convs.flatMap((c) => c.questions.filter((q) => q.category >= 1 && q.category <= 4).map((q) => q.question));
  return { messages, questions };
}

/**
 * The dense channel on and off on realistic text: `bench-recall` (words and meaning) and `bench-words` (words alone),
 * each on its own thread of LoCoMo messages, asked the same LoCoMo question in turn; undefined without the data.
 */
async function realisticPair(bench: TurnBench) {
  const text = locomoText();
  if (!text) return undefined;
  const { ew, key } = bench;
  for (const agent of ["bench-recall", "bench-words"]) {
    await json(`${ew.url}/v1/threads/real-${agent}/state`, { key, body: { ops: [{ op: "append", messages: text.messages }] } });
  }
  let asked = 0;
  const turn = (agent: string, q: string) => () =>
    json(`${ew.url}/v1/chat/completions`, {
      key,
      body: { model: "llama3.2", memory_scopes: ["session", "organization:acme"], thread_id: `real-${agent}`, agent, messages: [{ role: "user", content: q }] },
    });
  const on: number[] = [];
  const off: number[] = [];
  /** One question to both, in alternating order; `record`: false for the warm-up. */
  const step = async (record = true) => {
    const q = text.questions[asked++ % text.questions.length]!;
    const a = turn("bench-recall", q);
    const b = turn("bench-words", q);
    if (asked % 2) {
      const x = await timed(a);
      const y = await timed(b);
      if (record) on.push(x), off.push(y);
    } else {
      const y = await timed(b);
      const x = await timed(a);
      if (record) on.push(x), off.push(y);
    }
  };
  const report = () => {
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
    const p50on = percentile(sorted(on), 50);
    const p50off = percentile(sorted(off), 50);
    return { turns: on.length, dense_on_p50_ms: +p50on.toFixed(2), dense_off_p50_ms: +p50off.toFixed(2), dense_p50_ratio: +(p50on / p50off).toFixed(3) };
  };
  return { step, report };
}

/** Milliseconds from sending the request to the first byte of its body; the rest is read to the end. */
async function firstByte(url: string, body: unknown, key?: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok || !res.body) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const first = await reader.read();
  const ms = performance.now() - t0;
  if (first.done) throw new Error(`POST ${url}: empty body`);
  while (!(await reader.read()).done);
  return ms;
}

async function main() {
  const load = [loadavg()[0]!];
  // Two agents alike but for recall: issue 23's turn path is measured without recall (recall has its own cost
  // budget against `recall: false`, issue 21), beside the shipped turn, which recalls by default.
  const bench = await startTurnBench({
    platformFloor: !ONLY_DENSE,
    ...(PORT ? { ports: { edgeweave: PORT, passthrough: PORT + 1, inspectors: [PORT + 2, PORT + 3] as [number, number] } } : {}),
    agents: [
      { name: "bench-recall", set: {} },
      { name: "bench-norecall", set: { recall: false } },
      // The dense channel off (docs/concepts/recall-by-meaning.md): recall by words alone, as before it.
      { name: "bench-words", set: { recall: { channels: ["full_text"] } } },
    ],
  });
  const { ew, pt, key } = bench;
  const ptp = bench.ptPlatform!;
  try {
    const thread = "bench-thread";
    await bench.seedThread(thread);
    const edgeweave = () => json(`${ew.url}/v1/chat/completions`, { key, body: turnBody(thread) });
    const agentTurn = (agent: string) => () => json(`${ew.url}/v1/chat/completions`, { key, body: { ...turnBody(`${thread}-${agent}`), agent } });
    const recallOn = agentTurn("bench-recall");
    const recallOff = agentTurn("bench-norecall");
    await bench.seedThread(`${thread}-bench-recall`);
    await bench.seedThread(`${thread}-bench-norecall`);
    const recallWords = agentTurn("bench-words");
    await bench.seedThread(`${thread}-bench-words`);
    const real = await realisticPair(bench);
    if (ONLY_DENSE) {
      for (let i = 0; i < WARMUP; i++) {
        await real?.step(false);
        await recallOn();
        await recallWords();
      }
      const on: number[] = [];
      const words: number[] = [];
      for (let i = 0; i < TURNS; i++) {
        await real?.step();
        if (i % 2) on.push(await timed(recallOn)), words.push(await timed(recallWords));
        else words.push(await timed(recallWords)), on.push(await timed(recallOn));
      }
      load.push(loadavg()[0]!);
      on.sort((x, y) => x - y);
      words.sort((x, y) => x - y);
      const dense = {
        date: new Date().toISOString(),
        machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}`,
        load_avg_1m: { start: +load[0]!.toFixed(2), end: +load[1]!.toFixed(2) },
        realistic: real?.report() ?? "no LoCoMo data (LOCOMO_DIR)",
        filler: {
          turns: TURNS,
          dense_on_p50_ms: +percentile(on, 50).toFixed(2),
          dense_off_p50_ms: +percentile(words, 50).toFixed(2),
          dense_p50_ratio: +(percentile(on, 50) / percentile(words, 50)).toFixed(3),
        },
      };
      console.log(`BENCH turn-latency-dense ${JSON.stringify(dense)}`);
      return;
    }
    // The same turn through the Responses API, on the same thread seen as a conversation (issue 14: ratio ≤ 1.1 vs chat).
    const responsesTurn = () =>
      json(`${ew.url}/v1/responses`, {
        key,
        body: { model: "llama3.2", memory_scopes: ["session", "organization:acme"], conversation: thread, input: "Question 0?" },
      });
    const passthrough = () => json(pt.url, { body: { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false } });
    // The same pass-through carrying the context edgeweave sends the model (the thread's 1,000 messages
    // and the question): what a client would send without server-side memory. The gap to this is
    // edgeweave's own cost; the gap to the bare pass-through also counts moving the context.
    const context = [...bench.seed, { role: "user", content: "Question 0?" }];
    const passthroughContext = () => json(pt.url, { body: { model: "llama3.2", messages: context, stream: false } });
    // The design's floor here: the same one-message turn through one Durable Object RPC and one SQLite
    // write (bench/passthrough/worker.ts), bare and after a rate-limit binding call. Nothing of
    // edgeweave runs in it; the gap from the pass-through to it is what `wrangler dev` charges any
    // run-in-the-object design before it does any work of its own.
    const floorBody = { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false };
    const floor = (thread = "floor") => json(`${pt.url}/object?thread=${thread}`, { body: floorBody });
    const floorLimited = () => json(`${pt.url}/object-limited`, { body: floorBody });
    // The floor of a turn on a 1,000-message thread: the object sends its thread (kept in memory) and the
    // question to the upstream and stores the turn, after the rate-limit call.
    const seedFloor = (thread: string) => json(`${pt.url}/object-seed?thread=${thread}`, { body: bench.seed });
    const floorContext = (thread = "floor-context") => json(`${pt.url}/object-context?thread=${thread}`, { body: floorBody });
    await seedFloor("floor-context");
    // The same context floor on edgeweave's platform config (the asset router in front, minified).
    const seedFloorPlatform = (thread: string) => json(`${ptp.url}/object-seed?thread=${thread}`, { body: bench.seed });
    const floorContextPlatform = (thread = "floor-context") => json(`${ptp.url}/object-context?thread=${thread}`, { body: floorBody });
    await seedFloorPlatform("floor-context");
    if (process.env.BENCH_TIMING) {
      for (const [name, fn] of [
        ["health", () => fetch(`${ew.url}/health`).then((r) => r.text())],
        ["models(auth)", () => fetch(`${ew.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text())],
        ["route(auth+zod)", () => json(`${ew.url}/v1/route`, { key, body: { content: [{ type: "text", text: "hi" }], model_override: "llama3.2" } })],
        ["passthrough", passthrough],
      ] as const) {
        const xs: number[] = [];
        for (let i = 0; i < 40; i++) xs.push(await timed(fn));
        xs.sort((x, y) => x - y);
        console.log(`${name}: p50 ${percentile(xs, 50).toFixed(1)} ms`);
      }
      for (let i = 0; i < 10; i++) {
        const t0 = performance.now();
        const res = await fetch(`${ew.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: JSON.stringify(turnBody(thread)),
        });
        await res.text();
        console.log(`total ${(performance.now() - t0).toFixed(1)} ms; server-timing: ${res.headers.get("server-timing")}`);
      }
    }

    for (let i = 0; i < WARMUP; i++) {
      await edgeweave();
      await recallOn();
      await recallOff();
      await recallWords();
      await real?.step(false);
      await responsesTurn();
      await passthrough();
      await floor();
      await floorLimited();
      await floorContext();
      await floorContextPlatform();
    }
    const a: number[] = [];
    const f: number[] = [];
    const fl: number[] = [];
    const fc: number[] = [];
    const fcp: number[] = [];
    const b: number[] = [];
    const r: number[] = [];
    const c: number[] = [];
    const on: number[] = [];
    const off: number[] = [];
    const words: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      // Interleaved so machine noise hits all alike; the two agents in alternating order.
      a.push(await timed(edgeweave));
      if (i % 2) {
        on.push(await timed(recallOn));
        words.push(await timed(recallWords));
        off.push(await timed(recallOff));
      } else {
        off.push(await timed(recallOff));
        words.push(await timed(recallWords));
        on.push(await timed(recallOn));
      }
      await real?.step();
      r.push(await timed(responsesTurn));
      b.push(await timed(passthrough));
      c.push(await timed(passthroughContext));
      f.push(await timed(floor));
      fl.push(await timed(floorLimited));
      fc.push(await timed(floorContext));
      fcp.push(await timed(floorContextPlatform));
    }
    a.sort((x, y) => x - y);
    b.sort((x, y) => x - y);
    r.sort((x, y) => x - y);
    c.sort((x, y) => x - y);
    f.sort((x, y) => x - y);
    fl.sort((x, y) => x - y);
    fc.sort((x, y) => x - y);
    fcp.sort((x, y) => x - y);
    on.sort((x, y) => x - y);
    words.sort((x, y) => x - y);
    off.sort((x, y) => x - y);

    // Throughput with CONCURRENCY threads at once (each its own 1,000-message thread), against
    // the pass-through under the same concurrency; alternating rounds so noise hits both alike.
    const threads = Array.from({ length: CONCURRENCY }, (_, i) => `bench-conc-${i}`);
    for (const t of threads) await bench.seedThread(t);
    const concTurn = (t: string) => json(`${ew.url}/v1/chat/completions`, { key, body: turnBody(t) });
    const rate = async (one: (lane: number) => Promise<unknown>): Promise<number> => {
      const t0 = performance.now();
      let done = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async (_, lane) => {
          for (let i = 0; i < CONC_PER_LANE; i++) {
            await one(lane);
            done++;
          }
        }),
      );
      return done / ((performance.now() - t0) / 1000);
    };
    const ewRates: number[] = [];
    const ptRates: number[] = [];
    const ctxRates: number[] = [];
    const floorRates: number[] = [];
    const floorContextRates: number[] = [];
    const floorContextPlatformRates: number[] = [];
    for (let lane = 0; lane < CONCURRENCY; lane++) {
      await seedFloor(`floor-context-${lane}`);
      await seedFloorPlatform(`floor-context-${lane}`);
    }
    await rate((lane) => concTurn(threads[lane]!)); // warm-up
    for (let round = 0; round < 3; round++) {
      ewRates.push(await rate((lane) => concTurn(threads[lane]!)));
      ptRates.push(await rate(() => passthrough()));
      ctxRates.push(await rate(() => passthroughContext()));
      floorRates.push(await rate((lane) => floor(`floor-${lane}`)));
      floorContextRates.push(await rate((lane) => floorContext(`floor-context-${lane}`)));
      floorContextPlatformRates.push(await rate((lane) => floorContextPlatform(`floor-context-${lane}`)));
    }
    // Time to first byte of a streamed turn (SSE; the first chunk follows the upstream's first
    // NDJSON line) against the pass-through streaming the same upstream, interleaved.
    const streamThread = "bench-stream";
    await bench.seedThread(streamThread);
    const ewFirst = () => firstByte(`${ew.url}/v1/chat/completions`, turnBody(streamThread, 0, true), key);
    const ptFirst = () => firstByte(pt.url, { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: true });
    for (let i = 0; i < 10; i++) {
      await ewFirst();
      await ptFirst();
    }
    const ta: number[] = [];
    const tb: number[] = [];
    for (let i = 0; i < STREAM_TURNS; i++) {
      ta.push(await ewFirst());
      tb.push(await ptFirst());
    }
    ta.sort((x, y) => x - y);
    tb.sort((x, y) => x - y);
    load.push(loadavg()[0]!);

    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const result = {
      date: new Date().toISOString(),
      machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}`,
      load_avg_1m: { start: +load[0]!.toFixed(2), end: +load[1]!.toFixed(2) },
      turns: TURNS,
      thread_messages_at_start: 1000 + 4 * WARMUP,
      facts: 10,
      edgeweave_ms: { p50: +percentile(a, 50).toFixed(2), p99: +percentile(a, 99).toFixed(2) },
      passthrough_ms: { p50: +percentile(b, 50).toFixed(2), p99: +percentile(b, 99).toFixed(2) },
      p50_ratio: +(percentile(a, 50) / percentile(b, 50)).toFixed(2),
      p99_ratio: +(percentile(a, 99) / percentile(b, 99)).toFixed(2),
      passthrough_same_context_ms: { p50: +percentile(c, 50).toFixed(2), p99: +percentile(c, 99).toFixed(2) },
      p50_ratio_same_context: +(percentile(a, 50) / percentile(c, 50)).toFixed(2),
      floor_ms: { p50: +percentile(f, 50).toFixed(2), p99: +percentile(f, 99).toFixed(2) },
      floor_ratio: +(percentile(f, 50) / percentile(b, 50)).toFixed(2),
      floor_limited_ms: { p50: +percentile(fl, 50).toFixed(2), p99: +percentile(fl, 99).toFixed(2) },
      floor_limited_ratio: +(percentile(fl, 50) / percentile(b, 50)).toFixed(2),
      p50_ratio_vs_floor_limited: +(percentile(a, 50) / percentile(fl, 50)).toFixed(2),
      floor_context_ms: { p50: +percentile(fc, 50).toFixed(2), p99: +percentile(fc, 99).toFixed(2) },
      floor_context_ratio: +(percentile(fc, 50) / percentile(b, 50)).toFixed(2),
      p50_ratio_vs_floor_context: +(percentile(a, 50) / percentile(fc, 50)).toFixed(2),
      floor_context_platform_ms: { p50: +percentile(fcp, 50).toFixed(2), p99: +percentile(fcp, 99).toFixed(2) },
      p50_ratio_vs_floor_context_platform: +(percentile(a, 50) / percentile(fcp, 50)).toFixed(2),
      recall_twins: {
        recall_on_ms: { p50: +percentile(on, 50).toFixed(2), p99: +percentile(on, 99).toFixed(2) },
        recall_off_ms: { p50: +percentile(off, 50).toFixed(2), p99: +percentile(off, 99).toFixed(2) },
        recall_p50_ratio: +(percentile(on, 50) / percentile(off, 50)).toFixed(3),
        // Recall with the dense channel (shipped) against words alone, same run (issue 33: ≤ 1.1).
        recall_words_ms: { p50: +percentile(words, 50).toFixed(2), p99: +percentile(words, 99).toFixed(2) },
        dense_p50_ratio: +(percentile(on, 50) / percentile(words, 50)).toFixed(3),
        // The same on realistic text (LoCoMo messages and questions).
        realistic: real?.report() ?? "no LoCoMo data (LOCOMO_DIR)",
        recall_off_vs_floor_context: +(percentile(off, 50) / percentile(fc, 50)).toFixed(2),
        recall_off_vs_floor_context_platform: +(percentile(off, 50) / percentile(fcp, 50)).toFixed(2),
      },
      responses_ms: { p50: +percentile(r, 50).toFixed(2), p99: +percentile(r, 99).toFixed(2) },
      responses_vs_chat_p50_ratio: +(percentile(r, 50) / percentile(a, 50)).toFixed(2),
      concurrent: {
        threads: CONCURRENCY,
        edgeweave_rps: +med(ewRates).toFixed(1),
        passthrough_rps: +med(ptRates).toFixed(1),
        throughput_ratio: +(med(ewRates) / med(ptRates)).toFixed(2),
        passthrough_same_context_rps: +med(ctxRates).toFixed(1),
        throughput_ratio_same_context: +(med(ewRates) / med(ctxRates)).toFixed(2),
        floor_rps: +med(floorRates).toFixed(1),
        floor_throughput_ratio: +(med(floorRates) / med(ptRates)).toFixed(2),
        floor_context_rps: +med(floorContextRates).toFixed(1),
        floor_context_throughput_ratio: +(med(floorContextRates) / med(ptRates)).toFixed(2),
        throughput_ratio_vs_floor_context: +(med(ewRates) / med(floorContextRates)).toFixed(2),
        floor_context_platform_rps: +med(floorContextPlatformRates).toFixed(1),
        throughput_ratio_vs_floor_context_platform: +(med(ewRates) / med(floorContextPlatformRates)).toFixed(2),
      },
      stream_ttfb_ms: {
        turns: STREAM_TURNS,
        edgeweave_p50: +percentile(ta, 50).toFixed(2),
        passthrough_p50: +percentile(tb, 50).toFixed(2),
        added_p50: +(percentile(ta, 50) - percentile(tb, 50)).toFixed(2),
      },
      upstream_calls: bench.upstreamCalls(),
    };
    console.log(`BENCH turn-latency ${JSON.stringify(result)}`);
    // Issue 23's targets, against both floors, in one line (the JSON above has every figure).
    const mark = (ok: boolean) => (ok ? "✔" : "✘");
    const vsFloor = result.p50_ratio_vs_floor_context;
    const vsPlatform = result.p50_ratio_vs_floor_context_platform;
    const tFloor = result.concurrent.throughput_ratio_vs_floor_context;
    const tPlatform = result.concurrent.throughput_ratio_vs_floor_context_platform;
    const twins = result.recall_twins;
    console.log(
      `TARGETS load ${result.load_avg_1m.start}→${result.load_avg_1m.end}; edgeweave p50 ${result.edgeweave_ms.p50} ms, ${result.concurrent.edgeweave_rps} req/s (8 threads)\n` +
        `  issue 23's context floor (bare worker):         p50 ${result.floor_context_ms.p50} ms → ${vsFloor}× (≤ 1.3 ${mark(vsFloor <= 1.3)}); ` +
        `8 threads ${result.concurrent.floor_context_rps} req/s → ${tFloor}× (≥ 0.65 ${mark(tFloor >= 0.65)})\n` +
        `  same-platform context floor ([assets], minify): p50 ${result.floor_context_platform_ms.p50} ms → ${vsPlatform}× (≤ 1.3 ${mark(vsPlatform <= 1.3)}); ` +
        `8 threads ${result.concurrent.floor_context_platform_rps} req/s → ${tPlatform}× (≥ 0.65 ${mark(tPlatform >= 0.65)})\n` +
        `  the turn path without recall (agent with recall: false): p50 ${twins.recall_off_ms.p50} ms → ${twins.recall_off_vs_floor_context}× the bare floor ` +
        `(${mark(twins.recall_off_vs_floor_context <= 1.3)}), ${twins.recall_off_vs_floor_context_platform}× the same-platform floor ` +
        `(${mark(twins.recall_off_vs_floor_context_platform <= 1.3)}); its twin with recall ${twins.recall_on_ms.p50} ms → recall's cost ${twins.recall_p50_ratio}× (issue 21: ≤ 1.1 ${mark(twins.recall_p50_ratio <= 1.1)})\n` +
        `  recall by words alone (recall.channels: [full_text]): p50 ${twins.recall_words_ms.p50} ms → the dense channel's cost ${twins.dense_p50_ratio}× (issue 33: ≤ 1.1 ${mark(twins.dense_p50_ratio <= 1.1)})` +
        (typeof twins.realistic === "string"
          ? ""
          : `; on LoCoMo text ${twins.realistic.dense_on_p50_ms} vs ${twins.realistic.dense_off_p50_ms} ms → ${twins.realistic.dense_p50_ratio}× (${mark(twins.realistic.dense_p50_ratio <= 1.1)})`),
    );
  } finally {
    await bench.stop();
  }
}

await main();
