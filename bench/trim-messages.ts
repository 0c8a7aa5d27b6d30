/**
 * trim over 10,000 messages with tool calls: median time per call.
 *
 *   npx tsx bench/trim-messages.ts            (BENCH_RUNS=N to change repetitions)
 *
 * Compared in the same run, on the same input and the same per-message token
 * estimate (~4 chars/token + 4 per message):
 *   - naive-recount: drop the oldest message, repair pairs, recount everything, repeat
 *   - count-all: count every message once, then cut (O(history) instead of O(kept))
 *   - @langchain/core trimMessages (strategy "last", includeSystem) when importable,
 *     with a list counter summing the same estimate, plain and per-message cached
 */
import { performance } from "node:perf_hooks";
import { estimateTokens } from "../src/core/tokens.ts";
import { repairToolPairs } from "../src/pipeline/middleware/tool-pairs.ts";
import { trimMessages } from "../src/pipeline/middleware/trim.ts";
import type { Message } from "../src/core/message.ts";

const N = 10_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const SLOW_RUNS = Math.max(1, Math.min(RUNS, Number(process.env.BENCH_SLOW_RUNS ?? 3)));
const BUDGETS = [2_000, 32_000];

// Deterministic input: the same conversation every run.
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function buildConversation(n: number): Message[] {
  const rand = rng(42);
  const text = (min: number, max: number) => "lorem ipsum ".repeat(Math.ceil((min + rand() * (max - min)) / 12));
  const out: Message[] = [{ id: "sys", role: "system", content: "You are a helpful assistant.", created_at: 0 }];
  let i = 0;
  while (out.length < n) {
    out.push({ id: `u${i}`, role: "user", content: text(20, 400), created_at: i });
    if (rand() < 0.5) {
      const calls = Array.from({ length: 1 + Math.floor(rand() * 3) }, (_, k) => ({
        id: `c${i}-${k}`,
        type: "function" as const,
        function: { name: "search", arguments: JSON.stringify({ q: text(20, 150) }) },
      }));
      out.push({ id: `a${i}`, role: "assistant", content: null, tool_calls: calls, created_at: i });
      for (const c of calls) out.push({ id: `t${c.id}`, role: "tool", content: text(100, 2000), tool_call_id: c.id, created_at: i });
    }
    out.push({ id: `r${i}`, role: "assistant", content: text(50, 800), created_at: i });
    i++;
  }
  return out.slice(0, n);
}

const cost = (msgs: readonly Message[]) => msgs.reduce((s, m) => s + estimateTokens(m), 0);

function naiveRecount(messages: readonly Message[], maxTokens: number): Message[] {
  const sys = messages[0]!;
  for (let k = 1; k <= messages.length; k++) {
    const kept = [sys, ...repairToolPairs(messages.slice(k))];
    if (cost(kept) <= maxTokens) return kept;
  }
  return [sys];
}

/** Same result as ours, but every message of the history is counted first. */
function countAll(messages: readonly Message[], maxTokens: number): Message[] {
  const counts = new Map(messages.map((m) => [m, estimateTokens(m)]));
  return trimMessages(messages, { maxTokens, includeSystem: true, tokenCounter: (m) => counts.get(m as Message) ?? estimateTokens(m) });
}

async function median(runs: number, fn: () => unknown | Promise<unknown>, warmUp = true): Promise<number> {
  if (warmUp) await fn(); // the seconds-long baselines need none
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** The slice of @langchain/core/messages this bench uses. */
type LcMessage = { content: unknown; tool_calls?: { name: string; args: unknown }[] };
type LcModule = {
  trimMessages: (m: LcMessage[], o: Record<string, unknown>) => Promise<LcMessage[]>;
  SystemMessage: new (f: Record<string, unknown>) => LcMessage;
  HumanMessage: new (f: Record<string, unknown>) => LcMessage;
  AIMessage: new (f: Record<string, unknown>) => LcMessage;
  ToolMessage: new (f: Record<string, unknown>) => LcMessage;
};

async function loadLangChain(): Promise<LcModule | null> {
  const specifier = "@langchain/core/messages"; // a variable, so the bench type-checks without the package
  try {
    return (await import(specifier)) as LcModule;
  } catch {
    return null;
  }
}

function toLangChain(lc: LcModule, messages: readonly Message[]): LcMessage[] {
  return messages.map((m) => {
    const content = typeof m.content === "string" ? m.content : "";
    if (m.role === "system") return new lc.SystemMessage({ content });
    if (m.role === "user") return new lc.HumanMessage({ content });
    if (m.role === "tool") return new lc.ToolMessage({ content, tool_call_id: m.tool_call_id });
    return new lc.AIMessage({
      content,
      tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) as unknown, type: "tool_call" })),
    });
  });
}

/** The same estimate as estimateTokens, read from a LangChain message. */
function lcTokens(m: LcMessage): number {
  let chars = typeof m.content === "string" ? m.content.length : 0;
  for (const c of m.tool_calls ?? []) chars += c.name.length + JSON.stringify(c.args).length;
  return 4 + Math.ceil(chars / 4);
}

const fmt = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);

async function main() {
  const messages = buildConversation(N);
  const calls = messages.filter((m) => m.tool_calls).length;
  console.log(
    `trim-messages: ${messages.length} messages (${calls} with tool calls, ${cost(messages)} tokens), median of ${RUNS} runs (${SLOW_RUNS} for slow baselines)\n`,
  );
  const lc = await loadLangChain();
  const lcMessages = lc ? toLangChain(lc, messages) : [];
  for (const maxTokens of BUDGETS) {
    const ours = trimMessages(messages, { maxTokens, includeSystem: true });
    const naive = naiveRecount(messages, maxTokens);
    if (JSON.stringify(naive) !== JSON.stringify(ours)) throw new Error("naive and ours disagree: the bench input is broken");
    const rows: [string, number, number][] = [];
    rows.push(["edgeweave trimMessages", await median(RUNS, () => trimMessages(messages, { maxTokens, includeSystem: true })), ours.length]);
    rows.push(["count-all baseline", await median(RUNS, () => countAll(messages, maxTokens)), countAll(messages, maxTokens).length]);
    rows.push(["naive-recount baseline", await median(SLOW_RUNS, () => naiveRecount(messages, maxTokens), false), naive.length]);
    if (lc) {
      const plain = { maxTokens, strategy: "last", includeSystem: true, tokenCounter: (ms: LcMessage[]) => ms.reduce((s, m) => s + lcTokens(m), 0) };
      const cache = new WeakMap<LcMessage, number>();
      const cachedCount = (m: LcMessage) => cache.get(m) ?? (cache.set(m, lcTokens(m)), cache.get(m)!);
      const cached = { ...plain, tokenCounter: (ms: LcMessage[]) => ms.reduce((s, m) => s + cachedCount(m), 0) };
      const kept = (await lc.trimMessages(lcMessages, cached)).length;
      rows.push(["@langchain/core trimMessages", await median(SLOW_RUNS, () => lc.trimMessages(lcMessages, plain), false), kept]);
      rows.push(["@langchain/core (cached counter)", await median(SLOW_RUNS, () => lc.trimMessages(lcMessages, cached), false), kept]);
    }
    const base = rows[0]![1];
    console.log(`max_tokens ${maxTokens}:`);
    for (const [name, ms, keptCount] of rows) {
      const ratio = name.startsWith("edgeweave") ? "" : `  (${Math.round(ms / base).toLocaleString("en")}× ours)`;
      console.log(`  ${name.padEnd(34)} ${fmt(ms).padStart(11)}  kept ${keptCount}${ratio}`);
    }
    if (!lc) console.log("  @langchain/core trimMessages       skipped: @langchain/core is not installed");
    console.log();
  }
}

await main();
