// Issue 5 benchmark: latency of a stateful chat turn through `wrangler dev` (1,000-message
// thread, 10 facts) against a bare pass-through worker forwarding to the same zero-latency
// upstream, interleaved in the same run; then throughput with 8 threads at once against the
// pass-through at the same concurrency.  Run: npx tsx bench/turn-latency.ts [turns]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import { join } from "node:path";
import { startFakeOllama } from "./support/fake-ollama-server.ts";
import { percentile, run, startWranglerDev } from "./support/wrangler-dev.ts";

const TURNS = Number(process.argv[2] ?? 200);
const WARMUP = 20;
const CONCURRENCY = 8;
const CONC_PER_LANE = Number(process.env.BENCH_CONC_TURNS ?? 25);
const OPERATOR = "bench-operator-key";
const BENCH_CONFIG = "wrangler.bench.toml";

async function json(url: string, init: { key?: string; body?: unknown; method?: string } = {}): Promise<unknown> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "content-type": "application/json", ...(init.key ? { authorization: `Bearer ${init.key}` } : {}) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? "POST"} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function main() {
  const persist = mkdtempSync(join(tmpdir(), "edgeweave-bench-"));
  // Same config, rate limits lifted so the benchmark measures the turn, not the limiter.
  writeFileSync(BENCH_CONFIG, readFileSync("wrangler.toml", "utf8").replace(/limit = \d+/g, "limit = 1000000"));
  const upstream = await startFakeOllama();
  const servers: { stop(): Promise<void> }[] = [];
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", BENCH_CONFIG, "--persist-to", persist]);
    const ew = await startWranglerDev({ config: BENCH_CONFIG, persistTo: persist, vars: { OPERATOR_KEY: OPERATOR } });
    servers.push(ew);
    const pt = await startWranglerDev({ config: "bench/passthrough/wrangler.toml", persistTo: persist, readyPath: "/" });
    servers.push(pt);

    const tenant = `bench-${Date.now()}`;
    await json(`${ew.url}/v1/admin/tenants`, { key: OPERATOR, body: { id: tenant } });
    const { key } = (await json(`${ew.url}/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR, body: { role: "admin" } })) as { key: string };
    for (let i = 0; i < 10; i++) {
      await json(`${ew.url}/v1/memory/facts`, { key, body: { scope: "organization:acme", kind: "rule", text: `Rule ${i}: keep answers under ${i + 3} sentences.` } });
    }
    const thread = "bench-thread";
    const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4);
    const seed = Array.from({ length: 1000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i}: ${filler}` }));
    await json(`${ew.url}/v1/threads/${thread}/state`, { key, body: { ops: [{ op: "append", messages: seed }] } });

    // No agent middleware, so the thread keeps its 1,000+ messages; the facts come from a scope the key grants.
    const turnBody = (i: number) => ({ model: "llama3.2", memory_scopes: ["session", "organization:acme"], thread_id: thread, messages: [{ role: "user", content: `Question ${i}?` }] });
    const edgeweave = () => json(`${ew.url}/v1/chat/completions`, { key, body: turnBody(0) });
    // The same turn through the Responses API, on the same thread seen as a conversation (issue 14: ratio ≤ 1.1 vs chat).
    const responsesTurn = () => json(`${ew.url}/v1/responses`, { key, body: { model: "llama3.2", memory_scopes: ["session", "organization:acme"], conversation: thread, input: "Question 0?" } });
    const passthroughProbe = () => json(pt.url, { body: { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false } });
    if (process.env.BENCH_TIMING) {
      for (const [name, fn] of [
        ["health", () => fetch(`${ew.url}/health`).then((r) => r.text())],
        ["models(auth)", () => fetch(`${ew.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.text())],
        ["route(auth+zod)", () => json(`${ew.url}/v1/route`, { key, body: { content: [{ type: "text", text: "hi" }], model_override: "llama3.2" } })],
        ["passthrough", passthroughProbe],
      ] as const) {
        const xs: number[] = [];
        for (let i = 0; i < 40; i++) xs.push(await timed(fn));
        xs.sort((x, y) => x - y);
        console.log(`${name}: p50 ${percentile(xs, 50).toFixed(1)} ms`);
      }
      for (let i = 0; i < 10; i++) {
        const t0 = performance.now();
        const res = await fetch(`${ew.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: JSON.stringify(turnBody(0)) });
        await res.text();
        console.log(`total ${(performance.now() - t0).toFixed(1)} ms; server-timing: ${res.headers.get("server-timing")}`);
      }
    }
    const passthrough = () => json(pt.url, { body: { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false } });

    for (let i = 0; i < WARMUP; i++) {
      await edgeweave();
      await responsesTurn();
      await passthrough();
    }
    const a: number[] = [];
    const b: number[] = [];
    const r: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      // Interleaved so machine noise hits all alike.
      a.push(await timed(edgeweave));
      r.push(await timed(responsesTurn));
      b.push(await timed(passthrough));
    }
    a.sort((x, y) => x - y);
    b.sort((x, y) => x - y);
    r.sort((x, y) => x - y);

    // Throughput with CONCURRENCY threads at once (each its own 1,000-message thread), against
    // the pass-through under the same concurrency; alternating rounds so noise hits both alike.
    const threads = Array.from({ length: CONCURRENCY }, (_, i) => `bench-conc-${i}`);
    for (const t of threads) await json(`${ew.url}/v1/threads/${t}/state`, { key, body: { ops: [{ op: "append", messages: seed }] } });
    const concTurn = (t: string) => json(`${ew.url}/v1/chat/completions`, { key, body: { ...turnBody(0), thread_id: t } });
    const rate = async (one: (lane: number) => Promise<unknown>): Promise<number> => {
      const t0 = performance.now();
      let done = 0;
      await Promise.all(Array.from({ length: CONCURRENCY }, async (_, lane) => {
        for (let i = 0; i < CONC_PER_LANE; i++) {
          await one(lane);
          done++;
        }
      }));
      return done / ((performance.now() - t0) / 1000);
    };
    const ewRates: number[] = [];
    const ptRates: number[] = [];
    await rate((lane) => concTurn(threads[lane]!)); // warm-up
    for (let round = 0; round < 3; round++) {
      ewRates.push(await rate((lane) => concTurn(threads[lane]!)));
      ptRates.push(await rate(() => passthrough()));
    }
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const result = {
      date: new Date().toISOString(),
      machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}`,
      turns: TURNS,
      thread_messages_at_start: 1000 + 4 * WARMUP,
      facts: 10,
      edgeweave_ms: { p50: +percentile(a, 50).toFixed(2), p99: +percentile(a, 99).toFixed(2) },
      passthrough_ms: { p50: +percentile(b, 50).toFixed(2), p99: +percentile(b, 99).toFixed(2) },
      p50_ratio: +(percentile(a, 50) / percentile(b, 50)).toFixed(2),
      p99_ratio: +(percentile(a, 99) / percentile(b, 99)).toFixed(2),
      responses_ms: { p50: +percentile(r, 50).toFixed(2), p99: +percentile(r, 99).toFixed(2) },
      responses_vs_chat_p50_ratio: +(percentile(r, 50) / percentile(a, 50)).toFixed(2),
      concurrent: {
        threads: CONCURRENCY,
        edgeweave_rps: +med(ewRates).toFixed(1),
        passthrough_rps: +med(ptRates).toFixed(1),
        throughput_ratio: +(med(ewRates) / med(ptRates)).toFixed(2),
      },
      upstream_calls: upstream.calls(),
    };
    console.log(`BENCH turn-latency ${JSON.stringify(result)}`);
  } finally {
    for (const s of servers) await s.stop();
    await upstream.close();
    rmSync(BENCH_CONFIG, { force: true });
    rmSync(persist, { recursive: true, force: true });
  }
}

await main();
