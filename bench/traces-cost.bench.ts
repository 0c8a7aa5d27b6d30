import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import type { Principal } from "../src/core/principal";
import { memoryFor } from "../src/memory/for-tenant";
import { MemoryScope } from "../src/memory/scope";
import { dispatchTurn } from "../src/pipeline/dispatch-turn";
import { budgetObject, configOf, insertBudget, newBudget } from "../src/budgets/store";

/**
 * A turn with traces on, and a turn under a budget, against the same turn with neither, interleaved in one
 * run (issue 35: traces ≤ 1.05, budget ≤ 1.1): npx vitest run -c bench/memory-vitest.config.ts bench/traces-cost.bench.ts
 * The budget arm runs as another tenant with a tenant budget and a key budget (two counter objects asked per
 * model call, in parallel), large enough never to refuse.
 * The turn runs in the Worker with 10 facts loaded, its provider (OpenAI's wire format) and the
 * collector faked at the far side and answering at once, so tracing has no network wait to hide
 * behind: the ratio bounds its cost for a real turn, whose provider call is far longer. "To the answer"
 * is what the client waits; "with the export" adds what runs after it (the bookkeeping, and the
 * spans' encoding and post when traced).
 */
const SAMPLES = 41;
const TURNS_PER_SAMPLE = 10;
/** The second pass's provider think time: well under a real model call's time to its answer. */
const PROVIDER_MS = 100;
const TENANT = `bench-${crypto.randomUUID().slice(0, 8)}`;
const CAPPED = `${TENANT}-capped`;
const KEY = `key-${TENANT}`;
const ARMS = ["off", "on", "budget"] as const;
type Arm = (typeof ARMS)[number];
const COLLECTOR = "https://otel.bench/v1/traces";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

it("a turn with traces on, and under a budget, vs neither", async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  const principal = (tenant: string): Principal => ({ kind: "tenant", tenant, role: "admin", keyId: KEY, grants: ["*"] });
  await env.DB.prepare("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)").bind(CAPPED, CAPPED, Date.now()).run();
  await env.DB.prepare("INSERT INTO api_keys (id, tenant_id, role, key_hash, created_at) VALUES (?, ?, 'admin', ?, ?)")
    .bind(KEY, CAPPED, KEY, Date.now())
    .run();
  for (const b of [{ kind: "tenant" as const }, { kind: "key" as const, target: KEY }]) {
    const row = await newBudget(env, CAPPED, { ...b, limit_usd: 1_000_000, window: "month", time_zone: "UTC", thresholds: [] });
    await budgetObject(env, CAPPED, row.id).configure(configOf(row));
    await insertBudget(env.DB, CAPPED, row);
  }
  const realFetch = globalThis.fetch;
  let exported = 0;
  // The instant provider bounds each arm's own cost; a second, shorter pass gives it a provider's think time.
  let providerMs = 0;
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
    if (req.url.startsWith("https://api.openai.com/")) {
      if (providerMs > 0) await new Promise((r) => setTimeout(r, providerMs));
      return new Response(answer, { headers: { "content-type": "application/json" } });
    }
    return realFetch(req);
  };
  try {
    for (const tenant of [TENANT, CAPPED]) {
      const memory = memoryFor(env, tenant);
      for (let i = 0; i < 10; i++) await memory.remember(MemoryScope.new("organization", "acme"), "rule", `Rule ${i}: keep answers under ${i + 3} sentences.`);
    }
    const base = { ...env, OPENAI_API_KEY: "sk-bench", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" };
    const envs = { off: base, on: { ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: COLLECTOR }, budget: base };
    /** One turn: ms to its answer, and ms to the end of what it left behind (its bookkeeping, its settles and, traced, its export). */
    const turn = async (which: Arm, i: number) => {
      const after: Promise<unknown>[] = [];
      const t0 = performance.now();
      await dispatchTurn(
        { env: envs[which], waitUntil: (p) => after.push(p) },
        {
          principal: principal(which === "budget" ? CAPPED : TENANT),
          model: "gpt-4o-mini",
          memoryScopes: ["organization:acme"],
          messages: [{ role: "user", content: `Question ${i}?` }],
        },
      );
      const answered = performance.now() - t0;
      await Promise.all(after);
      return { answered, whole: performance.now() - t0 };
    };
    /** Medians per arm over `samples` rounds of `turns` turns each, after three warm-up rounds. */
    const pass = async (samples: number, turns: number) => {
      const ms = Object.fromEntries(ARMS.map((a) => [a, { answered: [] as number[], whole: [] as number[] }])) as Record<
        Arm,
        { answered: number[]; whole: number[] }
      >;
      // Samples rotate which arm goes first, so the machine's load hits all alike.
      for (let s = -3; s < samples; s++) {
        const k = ((s % 3) + 3) % 3;
        for (const which of [...ARMS.slice(k), ...ARMS.slice(0, k)]) {
          let answered = 0;
          let whole = 0;
          for (let i = 0; i < turns; i++) {
            const t = await turn(which, i);
            answered += t.answered;
            whole += t.whole;
          }
          if (s < 0) continue;
          ms[which].answered.push(answered / turns);
          ms[which].whole.push(whole / turns);
        }
      }
      const figure = (k: "answered" | "whole") => {
        const [off, on, budget] = ARMS.map((a) => median(ms[a][k])) as [number, number, number];
        return `neither ${off.toFixed(2)} ms, traces on ${on.toFixed(2)} ms (ratio ${(on / off).toFixed(3)}), under a budget ${budget.toFixed(2)} ms (ratio ${(budget / off).toFixed(3)})`;
      };
      return `to the answer ${figure("answered")}; with what runs after it ${figure("whole")}`;
    };
    const instant = await pass(SAMPLES, TURNS_PER_SAMPLE);
    providerMs = PROVIDER_MS;
    const thinking = await pass(15, 2);
    expect(exported).toBeGreaterThan(0);
    const standing = await budgetObject(
      env,
      CAPPED,
      (await env.DB.prepare("SELECT id FROM budgets WHERE tenant_id = ? AND kind = 'key'").bind(CAPPED).first<{ id: string }>())!.id,
    ).standing();
    expect(standing!.spent_micro).toBeGreaterThan(0);
    console.log(`BENCH traces and budgets (a turn in the Worker, 10 facts, provider and collector faked), provider at once: ${instant}; ${exported} exports`);
    console.log(`BENCH traces and budgets, provider answering after ${PROVIDER_MS} ms: ${thinking}`);
  } finally {
    globalThis.fetch = realFetch;
  }
});
