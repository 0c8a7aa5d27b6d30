import { applyD1Migrations, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { OPERATOR_TENANT } from "../src/core/principal";
import { memoryFor } from "../src/memory/for-tenant";
import { MemoryScope } from "../src/memory/scope";
import type { ThreadDO } from "../src/object/thread-object";
import { threadObjectName } from "../src/thread/thread-id";
import { logOf } from "./thread-support";

/**
 * loadContext([system, organization:acme, session]) with 50 facts, for a session of
 * 100 vs 100,000 messages. Goal: ratio <= 1.1 — loading reads only what it keeps
 * (facts by an indexed LIMIT query, turns by the thread object's reverse scan).
 * Real D1 + real Durable Object in workerd; seeding uses the object directly (bench only).
 */
const BUDGET = 4096;
const CALLS_PER_SAMPLE = 20;
const SAMPLES = 41;
const TENANT = `bench-${crypto.randomUUID().slice(0, 8)}`;

const line = (i: number) => `turn ${i}: ` + "the quick brown fox jumps over the lazy dog and keeps going ".repeat(3).slice(0, 190);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function seedThread(storage: DurableObjectStorage, n: number): void {
  const log = logOf(storage);
  for (let i = 0; i < n; i += 1000) {
    const count = Math.min(1000, n - i);
    const messages = Array.from({ length: count }, (_, j) => ({ role: (i + j) % 2 ? ("assistant" as const) : ("user" as const), content: line(i + j) }));
    log.update({ ops: [{ op: "append", messages }] }, "input");
  }
}

it("loadContext: 50 facts + session of 100 vs 100,000 messages", async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  const organization = MemoryScope.new("organization", "acme");
  const operator = memoryFor(env, OPERATOR_TENANT);
  const memory = memoryFor(env, TENANT);
  for (let i = 0; i < 10; i++) await operator.remember(MemoryScope.system(), "rule", `System rule ${i}: answer in the user's language and cite sources.`);
  for (let i = 0; i < 40; i++) await memory.remember(organization, "style", `Organization preference ${i}: keep answers short and friendly.`);

  const sizes = [100, 100_000] as const;
  const threads = sizes.map((n) => `bench-session-${n}`);
  for (const [i, n] of sizes.entries()) {
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(TENANT, threads[i]!)));
    await runInDurableObject(stub, (_instance: ThreadDO, state) => seedThread(state.storage, n));
  }
  const scopes = (i: number) => [MemoryScope.system(), organization, MemoryScope.session(threads[i]!)];

  const shape: { messages: number; facts: number; tokens: number }[] = [];
  const ms: number[][] = [[], []];
  // Samples alternate order between the two sessions so machine load hits both alike.
  for (let s = -3; s < SAMPLES; s++) {
    for (const i of s % 2 ? [0, 1] : [1, 0]) {
      const t0 = performance.now();
      let last: Awaited<ReturnType<typeof memory.loadContext>> | undefined;
      for (let c = 0; c < CALLS_PER_SAMPLE; c++) last = await memory.loadContext(scopes(i), BUDGET);
      const per = (performance.now() - t0) / CALLS_PER_SAMPLE;
      if (s >= 0) ms[i]!.push(per); // the first rounds warm caches
      shape[i] = { messages: last!.facts.length + last!.turns.length, facts: 50 - last!.dropped.facts, tokens: last!.tokens.facts + last!.tokens.turns };
    }
  }
  expect(shape[1]).toEqual(shape[0]); // the same context either way
  const [small, large] = [median(ms[0]!), median(ms[1]!)];
  console.log(
    `BENCH memory-load-context ${JSON.stringify({
      budget_tokens: BUDGET,
      context_messages: shape[0]!.messages,
      facts_loaded: shape[0]!.facts,
      context_tokens: shape[0]!.tokens,
      median_ms_session_100: +small.toFixed(3),
      median_ms_session_100000: +large.toFixed(3),
      ratio: +(large / small).toFixed(3),
      goal: "<= 1.1",
    })}`,
  );
});
