import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { installUpstream, mockUpstream } from "../../test/support/upstream";
import { configure, DEFAULT_MODEL, enable, type LatencyModel, takeCalls, upstreamDelay } from "./model";

/**
 * A streamed run's first token through LangGraph's API (POST /v1/agent-protocol/threads/{id}/runs/stream,
 * stream modes values + messages-tuple, as useStream asks) against a chat-completions stream's, on the
 * same thread, agent and model, interleaved in one run, under the modelled deployment (bench/latency/model.ts).
 * Goal: p50 ratio ≤ 1.2. Run: npx vitest run -c bench/latency-vitest.config.ts bench/latency/agent-protocol-ttft.bench.ts
 */
const TURNS = Number(__BENCH_TURNS__);
const OPERATOR = "bench-operator-key";
declare const __BENCH_TURNS__: string;
declare const __BENCH_LATENCY__: string;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Ollama answering "ok " then "streamed" after the modelled time to first token. */
function ollamaUpstream(): void {
  installUpstream();
  mockUpstream("http://localhost:11434", async (req) => {
    const body = (await req.json()) as { model?: string };
    const arrived = await upstreamDelay("worker", "model");
    const at = new Date().toISOString();
    const model = body.model ?? "llama3.2";
    const lines = [
      { model, created_at: at, message: { role: "assistant", content: "ok " }, done: false },
      { model, created_at: at, message: { role: "assistant", content: "streamed" }, done: false },
      { model, created_at: at, message: { role: "assistant", content: "" }, done_reason: "stop", done: true, prompt_eval_count: 10, eval_count: 5 },
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

const call = (path: string, body: unknown, key: string) =>
  exports.default.fetch(`http://x${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

async function ok(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** Milliseconds until the first SSE event `isToken` accepts; the rest of the stream is read to its end. */
async function firstToken(send: () => Promise<Response>, isToken: (block: string) => boolean): Promise<number> {
  takeCalls();
  const t0 = performance.now();
  const res = await send();
  if (res.status !== 200) throw new Error(`status ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const reader = res.body!.getReader();
  let buffer = "";
  let at: number | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at !== undefined) continue;
    buffer += dec.decode(value, { stream: true });
    const blocks = buffer.split("\n\n");
    buffer = blocks.pop() ?? "";
    if (blocks.some(isToken)) at = performance.now();
  }
  if (at === undefined) throw new Error("no token in the stream");
  // Bookkeeping after the answer (waitUntil) settles before the next sample.
  await new Promise((r) => setTimeout(r, 3 * DEFAULT_MODEL.d1PrimaryMs));
  return at - t0;
}

const chatToken = (block: string) => block.startsWith("data: {") && /"delta":\{[^}]*"content":"[^"]/.test(block);
const runToken = (block: string) => block.includes("event: messages\n");

const p50 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

it("LangGraph API stream: first token vs chat completions, same thread and model", async () => {
  const latency: LatencyModel = { ...DEFAULT_MODEL, ...(JSON.parse(__BENCH_LATENCY__) as Partial<LatencyModel>) };
  configure(latency);
  ollamaUpstream();
  enable(false);
  const tenant = `bench-${crypto.randomUUID().slice(0, 8)}`;
  await ok(await call("/v1/admin/tenants", { id: tenant }, OPERATOR));
  const { key } = (await ok(await call(`/v1/admin/tenants/${tenant}/keys`, { role: "admin" }, OPERATOR))) as { key: string };
  const thread = "bench-ap";
  await ok(await call("/v1/agent-protocol/threads", { thread_id: thread }, key));
  const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4);
  const seed = Array.from({ length: 1000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i}: ${filler}` }));
  await ok(await call(`/v1/threads/${thread}/state`, { ops: [{ op: "append", messages: seed }] }, key));

  const chat = () =>
    call(
      "/v1/chat/completions",
      { model: "llama3.2", agent: "assistant", stream: true, thread_id: thread, messages: [{ role: "user", content: "Question?" }] },
      key,
    );
  const run = () =>
    call(
      `/v1/agent-protocol/threads/${thread}/runs/stream`,
      {
        assistant_id: "assistant",
        config: { configurable: { model: "llama3.2" } },
        input: { messages: [{ type: "human", content: "Question?" }] },
        stream_mode: ["values", "messages-tuple"],
      },
      key,
    );

  enable(true);
  for (let i = 0; i < 3; i++) {
    await firstToken(chat, chatToken);
    await firstToken(run, runToken);
  }
  const rows = { chat: [] as number[], run: [] as number[] };
  for (let i = 0; i < TURNS; i++) {
    // Alternating order, so neither series always follows the other's bookkeeping.
    if (i % 2) {
      rows.run.push(await firstToken(run, runToken));
      rows.chat.push(await firstToken(chat, chatToken));
    } else {
      rows.chat.push(await firstToken(chat, chatToken));
      rows.run.push(await firstToken(run, runToken));
    }
  }
  enable(false);
  const r = (x: number) => +x.toFixed(1);
  const result = {
    model: latency,
    samples: TURNS,
    chat_first_token_p50_ms: r(p50(rows.chat)),
    langgraph_first_token_p50_ms: r(p50(rows.run)),
    ratio: +(p50(rows.run) / p50(rows.chat)).toFixed(3),
  };
  console.log(`BENCH agent-protocol-ttft ${JSON.stringify(result)}`);
  expect(rows.run.length).toBe(TURNS);
});
