import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { markOlderFacts } from "../../src/memory/fact-backfill";
import { MemoryScope } from "../../src/memory/scope";
import { markedText, tenantMark } from "../../src/memory/tenant-words";

// facts_fts is one FTS5 index for every tenant's facts. A search used to MATCH over all of it and
// drop other tenants' hits after the join, so its work (and time) grew with facts it may not read:
// a cost, and a timing side channel. D1 counts the rows a statement reads (meta.rows_read, rows
// out of the FTS5 index included); a search's count must depend on the searched facts only.

const uid = () => crypto.randomUUID().slice(0, 8);

/** The D1 database, recording the rows each statement's `all()` read, and each statement's bound values. */
function counting(db: D1Database): { db: D1Database; reads: number[]; bound: unknown[] } {
  const reads: number[] = [];
  const bound: unknown[] = [];
  const wrap = (s: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(s, {
      get(target, prop) {
        if (prop === "bind")
          return (...values: unknown[]) => {
            bound.push(...values);
            return wrap(target.bind(...values));
          };
        if (prop === "all")
          return async () => {
            const r = await target.all();
            reads.push(r.meta.rows_read);
            return r;
          };
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  return { db: new Proxy(db, { get: (t, p) => (p === "prepare" ? (sql: string) => wrap(t.prepare(sql)) : Reflect.get(t, p)) }), reads, bound };
}

async function many(store: D1FactsBackend, scope: MemoryScope, n: number, text: (i: number) => string): Promise<void> {
  for (let i = 0; i < n; i++) await store.remember(scope, "note", text(i));
}

describe("a fact search reads only the searched facts' rows", () => {
  it("another tenant's facts with the same words, and the tenant's other scopes, add no row to a scope search; only the tenant's own to a granted one", async () => {
    const [w1, w2] = [`quasar${uid()}`, `nebula${uid()}`];
    const query = `${w1} ${w2}`;
    const a = `cost-a-${uid()}`;
    const b = `cost-b-${uid()}`;
    const scope = MemoryScope.new("docset", `c${uid()}`);
    const other = MemoryScope.new("docset", `o${uid()}`);
    const rec = counting(env.DB);
    const reader = new D1FactsBackend(rec.db, a);
    const writerA = new D1FactsBackend(env.DB, a);
    await many(writerA, scope, 8, (i) => `${i % 2 ? w1 : w2} observation ${i}`);
    await many(writerA, scope, 8, (i) => `unrelated line ${i}`);
    // Tenant B is there from the start (an index range's end reads the next tenant's first entry: one row, however many it has).
    const writerB = new D1FactsBackend(env.DB, b);
    await writerB.remember(scope, "note", `${w1} ${w2} theirs`);
    await writerB.remember(other, "note", `${w2} also theirs`);

    const measure = async () => {
      rec.reads.length = 0;
      const hits = await reader.search([{ owner: a, scope: scope.toString() }], query, 20);
      const granted = await reader.searchGranted(["*"], false, query, 20);
      expect(rec.reads).toHaveLength(2);
      return { scoped: rec.reads[0]!, granted: rec.reads[1]!, hits: hits.map((h) => [h.id, h.score]), grantedHits: granted.length };
    };
    const before = await measure();
    expect(before.hits).toHaveLength(8);

    // The tenant's own other scope: the granted search reads it (it searches it), the scope search does not.
    await many(writerA, other, 30, (i) => `${w1} ${w2} elsewhere ${i}`);
    const own = await measure();
    expect(own.scoped).toBe(before.scoped);
    expect(own.hits).toEqual(before.hits);
    expect(own.grantedHits).toBe(20);
    expect(own.granted).toBeGreaterThan(before.granted);

    // Another tenant writes many facts with both words, in the same scope name and in others.
    await many(writerB, scope, 150, (i) => `${w1} ${w2} theirs ${i}`);
    await many(writerB, other, 150, (i) => `${w2} also theirs ${i}`);
    const after = await measure();
    expect(after).toEqual(own);
  });

  // FTS5 expands a prefix query ("quate"*) over every index term that begins with it, reading each one's
  // postings whoever's rows they are (the rowid ranges filter after): D1's rows_read does not see that
  // work, so it is counted here as the index terms the load's FTS5 expressions name or expand to.
  it("another tenant's words sharing a half-word add no index term to a ranked load's work", async () => {
    const c = `cost-c-${uid()}`;
    const d = `cost-d-${uid()}`;
    const word = `quaternion${uid().replace(/[^a-z]/g, "")}`;
    const half = word.slice(0, Math.ceil(word.length / 2));
    const scope = MemoryScope.new("docset", `v${uid()}`);
    const rec = counting(env.DB);
    const victim = new D1FactsBackend(rec.db, c);
    await many(new D1FactsBackend(env.DB, c), scope, 30, (i) => (i % 3 ? `routine line ${i} about rotations` : `the ${half}ly ${i} form`));
    await new D1FactsBackend(env.DB, d).remember(scope, "note", `${half}0 planted`);
    await env.DB.prepare("CREATE VIRTUAL TABLE IF NOT EXISTS cost_vocab USING fts5vocab(facts_fts, 'row')").run();
    const termsRead = async () => {
      let n = 0;
      for (const e of rec.bound.flatMap(ftsExpressions)) {
        const prefix = /^"(.*)"\*$/.exec(e)?.[1];
        if (prefix === undefined) n += 1;
        else
          n += (await env.DB.prepare("SELECT COUNT(*) AS n FROM cost_vocab WHERE substr(term, 1, ?) = ?").bind(prefix.length, prefix).first<{ n: number }>())!
            .n;
      }
      return n;
    };
    const load = async () => {
      rec.bound.length = 0;
      const out = await victim.loadLayer(scope, { facts: 40, rank: { query: `Which ${word}?` } });
      return { terms: await termsRead(), facts: out.facts.map((f) => [f.id, f.why]) };
    };
    try {
      const before = await load();
      // Ranked (30 facts do not fit 40 tokens), and the half-word finds the victim's own facts.
      expect(before.facts.length).toBeGreaterThan(0);
      expect(before.facts.every(([, why]) => why !== undefined)).toBe(true);
      // Tenant D plants thousands of distinct words beginning with the victim's half-word, in the same scope name.
      const start = Date.now() - 100_000;
      const markD = await tenantMark(d);
      await env.DB.batch(
        Array.from({ length: 100 }, (_, i) => {
          const text = Array.from({ length: 40 }, (_, j) => `${half}${i * 40 + j}`).join(" ");
          return env.DB.prepare(
            "INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, updated_at, fts_text) VALUES (?, ?, ?, 'note', ?, 40, ?, ?, ?)",
          ).bind(`plant-${uid()}-${i}`, d, scope.toString(), text, start + i, start + i, markedText(markD, text));
        }),
      );
      expect(await load()).toEqual(before);
    } finally {
      await env.DB.prepare("DROP TABLE cost_vocab").run();
    }
  });
});

describe("each tenant's words are its own terms of the shared index", () => {
  // FTS5 keeps one term dictionary per index: a whole word is looked up, and a prefix expanded, among every
  // term of facts_fts. A term a search names must be one only its own tenants' facts hold.
  it("the term a search names holds the searching tenant's facts only, however many of another tenant's facts hold the word", async () => {
    const c = `terms-c-${uid()}`;
    const d = `terms-d-${uid()}`;
    const word = `quaternion${uid().replace(/[^a-z]/g, "")}`;
    const scope = MemoryScope.new("docset", `t${uid()}`);
    const rec = counting(env.DB);
    const victim = new D1FactsBackend(rec.db, c);
    await many(new D1FactsBackend(env.DB, c), scope, 4, (i) => `the ${word} rotates ${i}`);
    await many(new D1FactsBackend(env.DB, d), scope, 40, (i) => `their ${word} ${i}`);
    rec.bound.length = 0;
    const hits = await victim.search([{ owner: c, scope: scope.toString() }], `Which ${word}?`, 20);
    expect(hits).toHaveLength(4);
    const named = rec.bound.flatMap(ftsExpressions);
    expect(named.length).toBeGreaterThan(0);
    // The postings FTS5 reads for each expression: every row of the whole index that holds its term.
    const held = [];
    for (const e of named) held.push((await env.DB.prepare("SELECT COUNT(*) AS n FROM facts_fts WHERE facts_fts MATCH ?").bind(e).first<{ n: number }>())!.n);
    expect(held.filter((n) => n > 0)).toEqual([4]);
  });

  it("a fact indexed before the marks is found by its words once the purge has marked it", async () => {
    const t = `terms-old-${uid()}`;
    const scope = MemoryScope.new("docset", `o${uid()}`);
    const word = `astrolabe${uid().replace(/[^a-z]/g, "")}`;
    // As migration 0031 found it: no fts_text, its plain words in the index.
    await env.DB.prepare("INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, updated_at) VALUES (?, ?, ?, 'note', ?, 5, 1, 1)")
      .bind(`old-${uid()}`, t, scope.toString(), `an old ${word} fact`)
      .run();
    await env.DB.prepare(
      "UPDATE facts_fts SET text = ? WHERE rowid = (SELECT span FROM fact_scope_stats WHERE tenant_id = ? AND scope = ?) * ? + (SELECT rowid FROM facts WHERE tenant_id = ?)",
    )
      .bind(`an old ${word} fact`, t, scope.toString(), 2 ** 36, t)
      .run();
    const store = new D1FactsBackend(env.DB, t);
    expect(await store.search([{ owner: t, scope: scope.toString() }], word, 5)).toEqual([]);
    while ((await markOlderFacts(env.DB)) > 0);
    expect((await store.search([{ owner: t, scope: scope.toString() }], word, 5)).map((f) => f.text)).toEqual([`an old ${word} fact`]);
  });
});

/** FTS5 query expressions among bound values (a string, or the strings of a JSON array): quoted phrases, `*` for a prefix. */
function ftsExpressions(v: unknown): string[] {
  if (typeof v !== "string") return [];
  if (/^"(?:[^"]|"")*"\*?$/.test(v)) return [v];
  try {
    const parsed: unknown = JSON.parse(v);
    return Array.isArray(parsed) ? parsed.flat(2).flatMap(ftsExpressions) : [];
  } catch {
    return [];
  }
}
