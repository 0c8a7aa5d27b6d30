import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { installUpstream, mockUpstream } from "../../test/support/upstream";
import { configure, DEFAULT_MODEL, enable, serialRoundTrips, takeCalls, upstreamDelay, workerRoundTrips, type LatencyModel } from "./model";

/**
 * A stateful turn (1,000-message thread, 10 organization facts) and a stream's first
 * byte, under a modelled deployment (bench/latency/model.ts), against a pass-through
 * worker calling the same modelled upstream. Prints serial remote round trips on the
 * critical path (the model call excluded) and the p50 milliseconds added over the
 * pass-through; and a Responses turn chained by previous_response_id, against the same
 * pass-through. Run: npx vitest run -c bench/latency-vitest.config.ts
 */
const TURNS = Number(__BENCH_TURNS__);
const OPERATOR = "bench-operator-key";
declare const __BENCH_TURNS__: string;
declare const __BENCH_LATENCY__: string;
declare const __BENCH_TRACE__: boolean;
const enc = new TextEncoder();

function ollamaUpstream(): void {
  installUpstream();
  mockUpstream("http://localhost:11434", async (req) => {
    const body = (await req.json()) as { model?: string; messages?: unknown[]; stream?: boolean };
    const arrived = await upstreamDelay("worker", "model");
    const model = body.model ?? "llama3.2";
    const done = {
      model,
      created_at: new Date().toISOString(),
      message: { role: "assistant", content: "" },
      done_reason: "stop",
      done: true,
      prompt_eval_count: 10,
      eval_count: 5,
    };
    if (body.stream === false) {
      arrived();
      return Response.json({ ...done, message: { role: "assistant", content: `ok (${body.messages?.length ?? 0} messages seen)` } });
    }
    const lines = [
      { model, created_at: done.created_at, message: { role: "assistant", content: "ok " }, done: false },
      { model, created_at: done.created_at, message: { role: "assistant", content: "streamed" }, done: false },
      done,
    ];
    arrived();
    return new Response(
      new ReadableStream({
        start(c) {
          for (const l of lines) c.enqueue(enc.encode(`${JSON.stringify(l)}\n`));
          c.close();
        },
      }),
      { headers: { "content-type": "application/x-ndjson" } },
    );
  });
}

async function call(path: string, body: unknown, key?: string): Promise<Response> {
  return exports.default.fetch(`http://x${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
}

async function ok(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** Time to the whole body (or to its first chunk) and the serial round trips before that moment. */
async function measure(send: () => Promise<Response>, firstByte: boolean): Promise<{ ms: number; trips: number; workerTrips: number }> {
  takeCalls();
  const t0 = performance.now();
  const res = await send();
  const reader = res.body!.getReader();
  const first = await reader.read();
  const tFirst = performance.now();
  if (first.done) throw new Error(`empty body (${res.status})`);
  for (;;) if ((await reader.read()).done) break;
  const tEnd = performance.now();
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const until = firstByte ? tFirst : tEnd;
  // Let bookkeeping after the response (waitUntil) settle so it does not spill into the next sample.
  await new Promise((r) => setTimeout(r, 3 * DEFAULT_MODEL.d1PrimaryMs));
  const calls = takeCalls();
  const trips = serialRoundTrips(calls, until);
  if (__BENCH_TRACE__)
    console.log(
      JSON.stringify({ trips, ms: until - t0, calls: calls.map((c) => ({ ...c, start: c.start - t0, end: c.end === undefined ? null : c.end - t0 })) }),
    );
  return { ms: until - t0, trips, workerTrips: workerRoundTrips(calls, until) };
}

const p50 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

it("latency model: stateful turn and stream TTFB vs a pass-through", async () => {
  const latency: LatencyModel = { ...DEFAULT_MODEL, ...(JSON.parse(__BENCH_LATENCY__) as Partial<LatencyModel>) };
  configure(latency);
  ollamaUpstream();
  enable(false); // seeding is not measured

  const tenant = `bench-${crypto.randomUUID().slice(0, 8)}`;
  await ok(await call("/v1/admin/tenants", { id: tenant }, OPERATOR));
  const { key } = (await ok(await call(`/v1/admin/tenants/${tenant}/keys`, { role: "admin" }, OPERATOR))) as { key: string };
  for (let i = 0; i < 10; i++)
    await ok(await call("/v1/memory/facts", { scope: "organization:acme", kind: "rule", text: `Rule ${i}: keep answers under ${i + 3} sentences.` }, key));
  const thread = "bench-thread";
  const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4);
  const seed = Array.from({ length: 1000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i}: ${filler}` }));
  await ok(await call(`/v1/threads/${thread}/state`, { ops: [{ op: "append", messages: seed }] }, key));

  const turn = (stream: boolean) => () =>
    call(
      "/v1/chat/completions",
      { model: "llama3.2", stream, memory_scopes: ["session", "organization:acme"], thread_id: thread, messages: [{ role: "user", content: "Question?" }] },
      key,
    );
  // A Responses turn chained by previous_response_id (how the OpenAI Agents SDK and the AI SDK's
  // Responses provider continue a conversation), each sample continuing the previous answer.
  // Its own 1,000-message thread, so every sample continues at the head (the chat samples move bench-thread's head).
  const responsesThread = "bench-responses";
  await ok(await call(`/v1/threads/${responsesThread}/state`, { ops: [{ op: "append", messages: seed }] }, key));
  let previous = ((await ok(await call("/v1/responses", { model: "llama3.2", conversation: responsesThread, input: "Start." }, key))) as { id: string }).id;
  const chained = async () => {
    const res = await call(
      "/v1/responses",
      { model: "llama3.2", memory_scopes: ["session", "organization:acme"], previous_response_id: previous, input: "Question?" },
      key,
    );
    const text = await res.text();
    if (res.ok) previous = (JSON.parse(text) as { id: string }).id;
    return new Response(text, { status: res.status });
  };
  const pass = (stream: boolean) => () => call("/__passthrough", { model: "llama3.2", stream, messages: [{ role: "user", content: "Question?" }] });

  enable(true);
  for (let i = 0; i < 3; i++) {
    await measure(turn(false), false);
    await measure(pass(false), false);
  }
  const rows = {
    turn: [] as number[],
    turnTrips: [] as number[],
    turnWorkerTrips: [] as number[],
    pass: [] as number[],
    ttfb: [] as number[],
    ttfbTrips: [] as number[],
    ttfbWorkerTrips: [] as number[],
    passTtfb: [] as number[],
    chained: [] as number[],
    chainedTrips: [] as number[],
    chainedWorkerTrips: [] as number[],
  };
  for (let i = 0; i < TURNS; i++) {
    const t = await measure(turn(false), false);
    rows.turn.push(t.ms);
    rows.turnTrips.push(t.trips);
    rows.turnWorkerTrips.push(t.workerTrips);
    rows.pass.push((await measure(pass(false), false)).ms);
    const s = await measure(turn(true), true);
    rows.ttfb.push(s.ms);
    rows.ttfbTrips.push(s.trips);
    rows.ttfbWorkerTrips.push(s.workerTrips);
    rows.passTtfb.push((await measure(pass(true), true)).ms);
    const c = await measure(chained, false);
    rows.chained.push(c.ms);
    rows.chainedTrips.push(c.trips);
    rows.chainedWorkerTrips.push(c.workerTrips);
  }
  enable(false);
  const r = (x: number) => +x.toFixed(1);
  const figures = (ms: number[], passMs: number[], trips: number[], workerTrips: number[]) => ({
    p50_ms: r(p50(ms)),
    passthrough_p50_ms: r(p50(passMs)),
    added_p50_ms: r(p50(ms) - p50(passMs)),
    serial_round_trips: p50(trips),
    max_round_trips: Math.max(...trips),
    worker_round_trips: p50(workerTrips),
  });
  const result = {
    model: latency,
    samples: TURNS,
    turn: figures(rows.turn, rows.pass, rows.turnTrips, rows.turnWorkerTrips),
    stream_ttfb: figures(rows.ttfb, rows.passTtfb, rows.ttfbTrips, rows.ttfbWorkerTrips),
    responses_chained: figures(rows.chained, rows.pass, rows.chainedTrips, rows.chainedWorkerTrips),
  };
  console.log(`BENCH latency-model ${JSON.stringify(result)}`);
  expect(rows.turn.length).toBe(TURNS);
});
