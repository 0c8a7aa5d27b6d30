import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { bm25Statement, type Reach } from "../src/memory/bm25-search";
import { factTokens } from "../src/memory/facts";
import { markedText, tenantMark } from "../src/memory/tenant-words";

/**
 * The fact search's statement (src/memory/bm25-search.ts), real D1 (FTS5) in workerd: one scope of
 * tenant A's five (1,000 facts each), while tenant B holds no facts, then 100,000 that share no word
 * with A's (the database grows), then 100,000 more drawn from A's words (the words' rows grow). Beside it, in the same database and the same loop, the statement as it was before
 * migration 0018: one MATCH per word over the whole index (a copy of it keyed by facts.rowid, as
 * facts_fts was), the other tenants' hits dropped at the join. Prints p50 and mean ms and D1's rows_read
 * (median) per search. Goal: the last two stages alike (B's facts holding A's words cost A's search nothing).
 *
 *   npx vitest run -c bench/memory-vitest.config.ts bench/memory-fact-search.bench.ts
 */
const A_SCOPES = 5;
const PER_SCOPE = 1000;
/** Tenant B's facts at each stage: none; 100,000 that share no word with A's; 100,000 more drawn from A's words. */
const STAGES = [
  { label: "B none", add: 0, words: "w" },
  { label: "B 100,000 of other words", add: 100_000, words: "v" },
  { label: "B 100,000 more, of A's words", add: 100_000, words: "w" },
] as const;
const VOCAB = 5000;
const SAMPLES = 15;
const A = `bench-a-${crypto.randomUUID().slice(0, 8)}`;
const B = `bench-b-${crypto.randomUUID().slice(0, 8)}`;

let seed = 17;
const rand = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
const word = (prefix = "w") => `${prefix}${Math.floor(rand() * VOCAB).toString(36)}x`;
const text = (prefix = "w") => Array.from({ length: 12 }, () => word(prefix)).join(" ");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
// workerd's clock moves in steps around I/O, so the p50 of one statement is coarse; the mean is not.
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

let made = 0;
async function seedFacts(tenant: string, scopes: readonly string[], n: number, prefix = "w"): Promise<void> {
  const mark = await tenantMark(tenant);
  for (let i = 0; i < n; i += 1000) {
    const stmts = Array.from({ length: Math.min(1000, n - i) }, (_, j) => {
      const t = text(prefix);
      made++;
      return env.DB.prepare(
        "INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, updated_at, fts_text) VALUES (?, ?, ?, 'note', ?, ?, ?, ?, ?)",
      ).bind(`f-${tenant}-${made}`, tenant, scopes[(i + j) % scopes.length]!, t, factTokens(t), made, made, markedText(mark, t));
    });
    await env.DB.batch(stmts);
  }
  // The copy of the index as it was keyed before 0018 (rowid = facts.rowid), for the old statement.
  await env.DB.prepare(
    "INSERT INTO facts_fts_old (rowid, text) SELECT rowid, text FROM facts WHERE tenant_id = ? AND rowid NOT IN (SELECT rowid FROM facts_fts_old)",
  )
    .bind(tenant)
    .run();
}

/** The statement before 0018: the same text, its MATCH (of the plain words, as before 0031) over every row of the index. */
async function statements(query: readonly string[]): Promise<{ now: D1PreparedStatement; before: D1PreparedStatement }> {
  const reach: Reach = { marks: [await tenantMark(A)], where: (p) => `(tenant_id = ${p.ref(A)} AND scope = ${p.ref("docset:a0")})` };
  let sql = "";
  let values: unknown[] = [];
  const capture = { prepare: (s: string) => ({ bind: (...v: unknown[]) => ((sql = s), (values = v), {}) }) } as unknown as D1Database;
  bm25Statement(capture, "f.id, f.text", reach, query, 20, Date.now());
  const each = /json_each\((\?\d+)\)/.exec(sql)?.[1];
  // (m was not MATERIALIZED then either: its hits ran once for df and again for s.)
  const old = sql.replace(
    /r AS \(.*?\), m AS MATERIALIZED \(/,
    `hits AS (SELECT t.key AS term, facts_fts_old.rowid AS rid FROM json_each(${each}) t CROSS JOIN facts_fts_old WHERE facts_fts_old MATCH '"' || substr(t.value ->> 0, 12)), m AS (`,
  );
  expect(each).toBeDefined();
  expect(old).not.toBe(sql);
  return { now: env.DB.prepare(sql).bind(...values), before: env.DB.prepare(old).bind(...values) };
}

it("fact search: one scope of tenant A, while tenant B holds no facts, 100,000 of other words, and 100,000 more of A's words", async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  await env.DB.prepare("CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts_old USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')").run();
  await seedFacts(
    A,
    Array.from({ length: A_SCOPES }, (_, i) => `docset:a${i}`),
    A_SCOPES * PER_SCOPE,
  );
  const queries = Array.from({ length: 16 }, () => [word(), word(), word(), word()]);
  for (const stage of STAGES) {
    await seedFacts(
      B,
      Array.from({ length: 10 }, (_, i) => `docset:b${i}`),
      stage.add,
      stage.words,
    );
    const ms = { now: [] as number[], before: [] as number[] };
    const rows = { now: [] as number[], before: [] as number[] };
    for (let s = 0; s < SAMPLES; s++) {
      for (const q of queries) {
        const st = await statements(q);
        // Alternating which goes first, so neither always runs on a warmer cache.
        for (const which of s % 2 ? (["now", "before"] as const) : (["before", "now"] as const)) {
          const t0 = performance.now();
          const r = await st[which].all<{ id: string }>();
          ms[which].push(performance.now() - t0);
          rows[which].push(r.meta.rows_read);
        }
      }
    }
    // Both statements answer the same.
    for (const q of queries.slice(0, 4)) {
      const st = await statements(q);
      expect((await st.now.all()).results).toEqual((await st.before.all()).results);
    }
    console.log(
      `BENCH fact-search, ${stage.label}: now p50 ${median(ms.now).toFixed(2)} ms, mean ${mean(ms.now).toFixed(2)} ms, rows_read ${median(rows.now)}; before 0018 p50 ${median(ms.before).toFixed(2)} ms, mean ${mean(ms.before).toFixed(2)} ms, rows_read ${median(rows.before)} (${queries.length * SAMPLES} searches each)`,
    );
  }
});
