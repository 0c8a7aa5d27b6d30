// LoCoMo recall bench (issue 21): stores each conversation through the public HTTP API (one thread,
// speaker A as `user`, each turn "<speaker>: <text>" with its session's date; the observations as
// facts in docset:loc-<id>), asks every category 1–4 question through POST /v1/memory/context and
// counts how often the evidence comes back, beside the newest-turns window and a plain BM25 over
// the same units in the same budget. Not part of `npm test`.
//
//   npx tsx bench/locomo/run.ts                       # starts wrangler dev on LOCOMO_PORT (8792)
//   LOCOMO_DIR=/path/to/locomo10_v2 npx tsx bench/locomo/run.ts
//   LOCOMO_URL=http://127.0.0.1:8787 LOCOMO_OPERATOR_KEY=dev-operator-key npx tsx bench/locomo/run.ts
//   LOCOMO_HOLDOUT=42,43 npx tsx bench/locomo/run.ts   # also the figures without and with only those conversations
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { estimateTokens } from "../../src/core/tokens.ts";
import { factHeaderTokens, factTokens } from "../../src/memory/facts.ts";
import { json } from "../support/turn-setup.ts";
import { percentile, run, startWranglerDev, type DevServer } from "../support/wrangler-dev.ts";
import { type Conversation, loadConversations } from "./data.ts";
import { Bm25, fill, newest, type Unit } from "./reference.ts";
import { cell, pairCell, type Score } from "./cells.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const BUDGETS = [1000, 2000, 4000];
const KIND = "observation";
const CONFIG = "wrangler.locomo.toml";

/** ../shared/data/locomo-dev beside the repository; from a git worktree, beside its main checkout. */
function defaultDir(): string {
  const rel = "../shared/data/locomo-dev";
  const here = join(ROOT, rel);
  if (existsSync(here)) return here;
  try {
    const common = execFileSync("git", ["rev-parse", "--path-format=absolute", "--git-common-dir"], { cwd: ROOT, encoding: "utf8" }).trim();
    const main = join(dirname(common), rel);
    if (existsSync(main)) return main;
  } catch {
    /* not a git checkout */
  }
  return here;
}

/** edgeweave's ranking as shipped (both channels fused), by words alone (today's lexical ranking), by meaning alone. */
const VARIANTS = { ew: undefined, lexical: ["full_text"], dense: ["dense"] } as const;
type Variant = keyof typeof VARIANTS;
type Row = {
  conv: string;
  category: number;
  turns: Record<number, Record<Variant, Score> & { newest: Score; bm25: Score }>;
  /** Words only and meaning only are measured for facts with LOCOMO_FACT_CHANNELS=1 (absent otherwise). */
  facts: Record<number, { ew: Score; lexical?: Score; dense?: Score; bm25: Score }>;
  ceiling: Score;
};

function score(evidence: readonly string[], got: ReadonlySet<string>): Score {
  const hits = evidence.filter((e) => got.has(e)).length;
  return { any: hits > 0 ? 1 : 0, all: hits === evidence.length ? 1 : 0 };
}

async function server(): Promise<{ url: string; operator: string; stop(): Promise<void> }> {
  if (process.env.LOCOMO_URL) return { url: process.env.LOCOMO_URL, operator: process.env.LOCOMO_OPERATOR_KEY ?? "dev-operator-key", stop: async () => {} };
  const persist = mkdtempSync(join(tmpdir(), "edgeweave-locomo-"));
  // Rate limits lifted: the bench asks thousands of questions a minute.
  writeFileSync(join(ROOT, CONFIG), readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace(/limit = \d+/g, "limit = 1000000"));
  const operator = "locomo-operator-key";
  let dev: DevServer | undefined;
  const cleanup = () => {
    rmSync(join(ROOT, CONFIG), { force: true });
    rmSync(persist, { recursive: true, force: true });
  };
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", CONFIG, "--persist-to", persist]);
    dev = await startWranglerDev({ config: CONFIG, persistTo: persist, vars: { OPERATOR_KEY: operator }, port: Number(process.env.LOCOMO_PORT ?? 8792) });
  } catch (e) {
    cleanup();
    throw e;
  }
  return {
    url: dev.url,
    operator,
    stop: async () => {
      await dev?.stop();
      cleanup();
    },
  };
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

type StoredFact = { id: string; text: string; dias: string[] };

async function ingest(url: string, key: string, c: Conversation): Promise<{ facts: StoredFact[]; turnsMs: number; factsMs: number }> {
  const thread = `loc-${c.id}`;
  const t0 = performance.now();
  for (const session of new Set(c.turns.map((t) => t.session))) {
    const messages = c.turns
      .filter((t) => t.session === session)
      .map((t) => ({ id: t.dia, role: t.speaker === c.speakerA ? "user" : "assistant", content: `${t.speaker}: ${t.text}`, created_at: t.at }));
    await json(`${url}/v1/threads/${thread}/state`, { key, body: { ops: [{ op: "append", messages }] } });
  }
  const t1 = performance.now();
  const facts: StoredFact[] = [];
  await pool(c.observations, 4, async (o) => {
    const f = (await json(`${url}/v1/memory/facts`, { key, body: { scope: `docset:loc-${c.id}`, kind: KIND, text: o.text } })) as { id: string };
    facts.push({ id: f.id, text: o.text, dias: o.dias });
  });
  return { facts, turnsMs: t1 - t0, factsMs: performance.now() - t1 };
}

type Context = { messages: { id: string; metadata?: { fact?: { ids: string[] }; recalled?: string[] } }[] };

async function main(): Promise<void> {
  const dir = process.env.LOCOMO_DIR ?? defaultDir();
  const convs = loadConversations(dir);
  const srv = await server();
  const rows: Row[] = [];
  const queryMs: number[] = [];
  // The facts track's calls alone (one docset scope, ranked: the fact search's statement), beside all calls.
  const factQueryMs: number[] = [];
  let turnsMs = 0;
  let factsMs = 0;
  try {
    const tenant = `locomo-${Date.now()}`;
    await json(`${srv.url}/v1/admin/tenants`, { key: srv.operator, body: { id: tenant } });
    const { key } = (await json(`${srv.url}/v1/admin/tenants/${tenant}/keys`, { key: srv.operator, body: { role: "admin" } })) as { key: string };
    for (const c of convs) {
      const ing = await ingest(srv.url, key, c);
      turnsMs += ing.turnsMs;
      factsMs += ing.factsMs;
      const scope = `docset:loc-${c.id}`;
      const turnUnits: Unit[] = c.turns.map((t) => {
        const content = `${t.speaker}: ${t.text}`;
        return { id: t.dia, text: content, tokens: estimateTokens({ role: t.speaker === c.speakerA ? "user" : "assistant", content }) };
      });
      // A fact costs its line; the scope's one group header is paid once, from the reference's budget too.
      const factUnits: Unit[] = ing.facts.map((x) => ({ id: x.id, text: x.text, tokens: factTokens(x.text) }));
      const header = factHeaderTokens({ kind: KIND, scope });
      const factDias = new Map(ing.facts.map((x) => [x.id, x.dias]));
      const turnBm25 = new Bm25(turnUnits);
      const factBm25 = new Bm25(factUnits);
      const covered = (ids: Iterable<string>) => new Set([...ids].flatMap((id) => factDias.get(id) ?? []));
      const allDias = covered(factDias.keys());
      const questions = c.questions.filter((q) => q.category >= 1 && q.category <= 4 && q.evidence.length > 0);
      // A few questions at a time: each asks one thread object and D1, which answer calls one by one.
      await pool(questions, 3, async (q) => {
        const row: Row = { conv: c.id, category: q.category, turns: {}, facts: {}, ceiling: score(q.evidence, allDias) };
        const rankedTurns = turnBm25.rank(q.question);
        const rankedFacts = factBm25.rank(q.question);
        for (const b of BUDGETS) {
          const ask = async (scopes: string[], maxTokens: number, channels: readonly string[] | undefined, into?: number[]) => {
            const t0 = performance.now();
            const body = { scopes, max_tokens: maxTokens, query: q.question, ...(channels ? { channels } : {}) };
            const ctx = (await json(`${srv.url}/v1/memory/context`, { key, body })) as Context;
            if (!channels) {
              queryMs.push(performance.now() - t0);
              into?.push(performance.now() - t0);
            }
            return ctx.messages;
          };
          const turns = { newest: score(q.evidence, newest(turnUnits, b)), bm25: score(q.evidence, fill(rankedTurns, b)) } as Row["turns"][number];
          const facts = { bm25: score(q.evidence, covered(fill(rankedFacts, b - header))) } as Row["facts"][number];
          for (const [v, channels] of Object.entries(VARIANTS) as [Variant, readonly string[] | undefined][]) {
            const turnMsgs = await ask([`session:loc-${c.id}`], b, channels);
            // Recalled turns travel in one system message whose metadata names them.
            turns[v] = score(q.evidence, new Set(turnMsgs.filter((m) => !m.metadata?.fact).flatMap((m) => m.metadata?.recalled ?? [m.id])));
            if (v !== "ew" && process.env.LOCOMO_FACT_CHANNELS !== "1") continue;
            // Facts get half of max_tokens (README), so the facts track asks for twice the budget shown.
            const factMsgs = await ask([scope], 2 * b, channels, factQueryMs);
            facts[v] = score(q.evidence, covered(factMsgs.flatMap((m) => m.metadata?.fact?.ids ?? [])));
          }
          row.turns[b] = turns;
          row.facts[b] = facts;
        }
        rows.push(row);
      });
      console.error(`  loc-${c.id}: ${c.turns.length} turns, ${c.observations.length} facts, ${rows.filter((r) => r.conv === c.id).length} questions`);
    }
  } finally {
    await srv.stop();
  }
  report(convs, rows, { turnsMs, factsMs, queryMs, factQueryMs });
}

function report(convs: Conversation[], rows: Row[], t: { turnsMs: number; factsMs: number; queryMs: number[]; factQueryMs: number[] }): void {
  const pair = (sel: (r: Row) => Score | undefined, rs: Row[] = rows) => pairCell(rs.map(sel));
  const sorted = [...t.queryMs].sort((a, b) => a - b);
  const factSorted = [...t.factQueryMs].sort((a, b) => a - b);
  console.log(
    `LoCoMo: ${convs.length} conversations (${convs.map((c) => c.id).join(", ")}), ${rows.length} questions (categories 1–4), ` +
      `${convs.reduce((n, c) => n + c.turns.length, 0)} turns, ${convs.reduce((n, c) => n + c.observations.length, 0)} observations; load average ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(
    `ingest: turns ${(t.turnsMs / 1000).toFixed(1)} s, facts ${(t.factsMs / 1000).toFixed(1)} s; ` +
      `query (POST /v1/memory/context) p50 ${percentile(sorted, 50).toFixed(2)} ms, p90 ${percentile(sorted, 90).toFixed(2)} ms over ${sorted.length}; ` +
      `the facts track's alone p50 ${percentile(factSorted, 50).toFixed(2)} ms, p90 ${percentile(factSorted, 90).toFixed(2)} ms over ${factSorted.length}`,
  );
  console.log("\nrecall_any / recall_all\n");
  console.log("| units | budget | edgeweave (fused) | words only (full_text) | meaning only (dense) | newest turns | plain BM25 | facts ceiling |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const b of BUDGETS)
    console.log(
      `| turns | ${b} | **${pair((r) => r.turns[b]!.ew)}** | ${pair((r) => r.turns[b]!.lexical)} | ${pair((r) => r.turns[b]!.dense)} | ${pair((r) => r.turns[b]!.newest)} | ${pair((r) => r.turns[b]!.bm25)} | — |`,
    );
  for (const b of BUDGETS)
    console.log(
      `| facts | ${b} | **${pair((r) => r.facts[b]!.ew)}** | ${pair((r) => r.facts[b]!.lexical)} | ${pair((r) => r.facts[b]!.dense)} | — | ${pair((r) => r.facts[b]!.bm25)} | ${pair((r) => r.ceiling)} |`,
    );
  // Each cell: fused / words only / plain BM25, recall_any; the turns at 2,000 tokens also recall_all (fused / words only).
  const cells = (rs: Row[]) => {
    const m = (sel: (r: Row) => number | undefined) => cell(rs.map(sel));
    const three = (t: "turns" | "facts", b: number) => `${m((r) => r[t][b]!.ew.any)} / ${m((r) => r[t][b]!.lexical?.any)} / ${m((r) => r[t][b]!.bm25.any)}`;
    const all2000 = `${m((r) => r.turns[2000]!.ew.all)} / ${m((r) => r.turns[2000]!.lexical.all)}`;
    return `${BUDGETS.map((b) => three("turns", b)).join(" | ")} | ${all2000} | ${BUDGETS.map((b) => three("facts", b)).join(" | ")}`;
  };
  const head = `| n | ${BUDGETS.map((b) => `turns ${b}`).join(" | ")} | turns 2000 all | ${BUDGETS.map((b) => `facts ${b}`).join(" | ")} |`;
  const rule = `| --- | --- | ${BUDGETS.map(() => "---").join(" | ")} | --- | ${BUDGETS.map(() => "---").join(" | ")} |`;
  console.log("\nper category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop): fused / words only / plain BM25, recall_any\n");
  console.log(`| category ${head}`);
  console.log(rule);
  for (const cat of [1, 2, 3, 4]) {
    const rs = rows.filter((r) => r.category === cat);
    console.log(`| ${cat} | ${rs.length} | ${cells(rs)} |`);
  }
  const holdout = new Set(
    (process.env.LOCOMO_HOLDOUT ?? "")
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  );
  const groups: [string, Row[]][] = convs.map((c) => [`loc-${c.id}`, rows.filter((r) => r.conv === c.id)]);
  if (holdout.size > 0)
    groups.push(
      [`without ${[...holdout].join(", ")}`, rows.filter((r) => !holdout.has(r.conv))],
      [`hold-out ${[...holdout].join(", ")}`, rows.filter((r) => holdout.has(r.conv))],
    );
  console.log("\nby conversation: fused / words only / plain BM25, recall_any\n");
  console.log(`| conversations ${head}`);
  console.log(rule);
  for (const [name, rs] of groups) console.log(`| ${name} | ${rs.length} | ${cells(rs)} |`);
  const out = join(ROOT, "bench/results");
  mkdirSync(out, { recursive: true });
  const file = join(out, `locomo-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), rows, queryMs: t.queryMs }, null, 0));
  console.log(`\n(per-question results: ${file})`);
}

if (!existsSync(join(ROOT, "wrangler.toml"))) throw new Error("run from the repository");
await main();
