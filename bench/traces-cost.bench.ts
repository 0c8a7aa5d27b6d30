import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import type { Principal } from "../src/core/principal";
import { memoryFor } from "../src/memory/for-tenant";
import { MemoryScope } from "../src/memory/scope";
import { dispatchTurn } from "../src/pipeline/dispatch-turn";

/**
 * A turn with traces on against the same turn with traces off, interleaved in one run (issue 35:
 * ratio ≤ 1.05): npx vitest run -c bench/memory-vitest.config.ts bench/traces-cost.bench.ts
 * The turn runs in the Worker with 10 facts loaded, its provider (OpenAI's wire format) and the
 * collector faked at the far side and answering at once, so tracing has no network wait to hide
 * behind: the ratio bounds its cost for a real turn, whose provider call is far longer. "To the answer"
 * is what the client waits; "with the export" adds what runs after it (the bookkeeping, and the
 * spans' encoding and post when traced).
 */
const SAMPLES = 41;
const TURNS_PER_SAMPLE = 10;
const TENANT = `bench-${crypto.randomUUID().slice(0, 8)}`;
const COLLECTOR = "https://otel.bench/v1/traces";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

it("a turn with traces on vs off", async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  const principal: Principal = { kind: "tenant", tenant: TENANT, role: "admin", keyId: "bench", grants: ["*"] };
  const realFetch = globalThis.fetch;
  let exported = 0;
  const answer = JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1,
    model: "gpt-4o-mini",
    choices: [{ index: 0, message: { role: "assistant", content: "Keep it short." }, finish_reason: "stop" }],
    usage: { prompt_tokens: 120, completion_tokens: 4, total_tokens: 124 },
  });
  // The provider and the collector, at the far side: each answers at once.
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    if (req.url === COLLECTOR) {
      // Not decoded: the collector's work is not the turn's.
      await req.body?.cancel();
      exported++;
      return new Response("{}", { status: 200 });
    }
    if (req.url.startsWith("https://api.openai.com/")) return new Response(answer, { headers: { "content-type": "application/json" } });
    return realFetch(req);
  };
  try {
    const memory = memoryFor(env, TENANT);
    for (let i = 0; i < 10; i++) await memory.remember(MemoryScope.new("organization", "acme"), "rule", `Rule ${i}: keep answers under ${i + 3} sentences.`);
    const base = { ...env, OPENAI_API_KEY: "sk-bench" };
    const envs = { off: { ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" }, on: { ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: COLLECTOR } };
    /** One turn: ms to its answer, and ms to the end of what it left behind (its bookkeeping and, traced, its export). */
    const turn = async (which: "on" | "off", i: number) => {
      const after: Promise<unknown>[] = [];
      const t0 = performance.now();
      await dispatchTurn(
        { env: envs[which], waitUntil: (p) => after.push(p) },
        { principal, model: "gpt-4o-mini", memoryScopes: ["organization:acme"], messages: [{ role: "user", content: `Question ${i}?` }] },
      );
      const answered = performance.now() - t0;
      await Promise.all(after);
      return { answered, whole: performance.now() - t0 };
    };
    const ms = { on: { answered: [] as number[], whole: [] as number[] }, off: { answered: [] as number[], whole: [] as number[] } };
    // Samples alternate which goes first, so the machine's load hits both alike; the first three warm up.
    for (let s = -3; s < SAMPLES; s++) {
      for (const which of s % 2 ? (["on", "off"] as const) : (["off", "on"] as const)) {
        let answered = 0;
        let whole = 0;
        for (let i = 0; i < TURNS_PER_SAMPLE; i++) {
          const t = await turn(which, i);
          answered += t.answered;
          whole += t.whole;
        }
        if (s < 0) continue;
        ms[which].answered.push(answered / TURNS_PER_SAMPLE);
        ms[which].whole.push(whole / TURNS_PER_SAMPLE);
      }
    }
    expect(exported).toBeGreaterThan(0);
    const figure = (k: "answered" | "whole") => {
      const [off, on] = [median(ms.off[k]), median(ms.on[k])];
      return `off ${off.toFixed(2)} ms, on ${on.toFixed(2)} ms, ratio ${(on / off).toFixed(3)}`;
    };
    console.log(
      `BENCH traces (a turn in the Worker, 10 facts, provider and collector faked): to the answer ${figure("answered")}; with the export ${figure("whole")}; ${exported} exports`,
    );
  } finally {
    globalThis.fetch = realFetch;
  }
});
