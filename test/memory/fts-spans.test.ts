import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FTS_SPAN } from "../../src/memory/bm25-search";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { MemoryScope } from "../../src/memory/scope";
import { PROPERTY_SEED } from "../support/property-seed";

// facts_fts rowids by scope span (migration 0018) under a random mix of writes, key replacements and
// deletes across tenants, one of them past a block of 32 scopes and scopes opened after other tenants':
// every search answers exactly the facts of its scopes that hold the word (no ghost, none missing, no
// other tenant's), and the index holds each fact once at its scope's span.

const WORDS = ["comet", "orbit", "nebula", "quasar", "pulsar", "meteor"];

/** mulberry32, fixed seed: the same run every time. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Held = { tenant: string; scope: string; text: string; key: string | null };

const indexed = () =>
  env.DB.prepare(
    "SELECT (SELECT COUNT(*) FROM facts) AS facts, (SELECT COUNT(*) FROM facts_fts) AS rows, " +
      `(SELECT COUNT(*) FROM facts f JOIN fact_scope_stats s USING (tenant_id, scope) JOIN facts_fts x ON x.rowid = s.span * ${FTS_SPAN} + f.rowid WHERE x.text = f.fts_text) AS placed`,
  ).first<{ facts: number; rows: number; placed: number }>();

describe("facts_fts spans under random writes", () => {
  it("every search answers exactly its scopes' facts holding the word, across tenants, blocks, replacements and deletes", async () => {
    const rand = random(PROPERTY_SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const run = crypto.randomUUID().slice(0, 8);
    const tenants = ["a", "b", "c"].map((t) => `fts-${t}-${run}`);
    const backends = new Map(tenants.map((t) => [t, new D1FactsBackend(env.DB, t, () => 1_000)]));
    // Tenant a reaches 45 scopes (two blocks), b and c a few; session:a…, session:ab… and docset scopes for the prefix grants.
    const scopesOf = (t: string) => (t === tenants[0] ? 45 : 6);
    const scopeName = (i: number) => (i % 3 === 0 ? `session:a${i}` : i % 3 === 1 ? `session:b${i}` : `docset:d${i}`);
    const held = new Map<string, Held>();
    const base = (await indexed())!;

    const expectSearch = async (tenant: string, scopes: string[], word: string) => {
      const hits = await backends.get(tenant)!.search(
        scopes.map((scope) => ({ owner: tenant, scope })),
        word,
        1_000,
      );
      const want = [...held.entries()].filter(([, f]) => f.tenant === tenant && scopes.includes(f.scope) && f.text.split(" ").includes(word));
      expect(hits.map((h) => h.id).sort(), `${tenant} ${word} over ${scopes.length} scopes`).toEqual(want.map(([id]) => id).sort());
    };
    const expectGranted = async (tenant: string, grant: string, word: string) => {
      const hits = await backends.get(tenant)!.searchGranted([grant], false, word, 1_000);
      const inGrant = (s: string) => (grant === "*" ? true : grant.endsWith("*") ? s.startsWith(grant.slice(0, -1)) : s === grant);
      const want = [...held.entries()].filter(([, f]) => f.tenant === tenant && inGrant(f.scope) && f.text.split(" ").includes(word));
      expect(hits.map((h) => h.id).sort(), `${tenant} ${grant} ${word}`).toEqual(want.map(([id]) => id).sort());
    };

    for (let step = 0; step < 400; step++) {
      const tenant = pick(tenants);
      const backend = backends.get(tenant)!;
      // Scopes open over time, so tenants' first writes interleave with the others' blocks.
      const scope = scopeName(Math.floor(rand() * Math.min(scopesOf(tenant), 2 + step / 6)));
      const r = rand();
      const text = `${pick(WORDS)} ${pick(WORDS)} step${step}`;
      if (r < 0.55) {
        const key = rand() < 0.4 ? `k${Math.floor(rand() * 4)}` : null;
        const [name, id] = scope.split(":") as [string, string];
        const fact = await backend.remember(MemoryScope.new(name, id), "note", text, key ? { key } : {});
        held.set(fact.id, { tenant, scope, text, key });
      } else if (r < 0.75 && held.size > 0) {
        const [id, f] = pick([...held.entries()]);
        expect(await backends.get(f.tenant)!.forget(id)).toBe(true);
        held.delete(id);
        // The same key written again at once: a new row where the old one was.
        if (f.key && rand() < 0.5) {
          const [name, sid] = f.scope.split(":") as [string, string];
          const again = await backends.get(f.tenant)!.remember(MemoryScope.new(name, sid), "note", text, { key: f.key });
          held.set(again.id, { ...f, text });
        }
      } else if (r < 0.9) {
        const n = 1 + Math.floor(rand() * 8);
        const scopes = [...new Set(Array.from({ length: n }, () => scopeName(Math.floor(rand() * scopesOf(tenant)))))];
        await expectSearch(tenant, scopes, pick(WORDS));
      } else {
        await expectGranted(tenant, pick(["*", "session:a*", "session:a1*", "docset:d2", "session:*"]), pick(WORDS));
      }
    }
    // Every scope of tenant a written (its 33rd opens a block past the others'), then searched again.
    for (let i = 0; i < scopesOf(tenants[0]!); i++) {
      const [name, id] = scopeName(i).split(":") as [string, string];
      const fact = await backends.get(tenants[0]!)!.remember(MemoryScope.new(name, id), "note", `comet last${i}`);
      held.set(fact.id, { tenant: tenants[0]!, scope: scopeName(i), text: `comet last${i}`, key: null });
    }
    await expectSearch(tenants[0]!, [scopeName(0), scopeName(31), scopeName(32), scopeName(44)], "comet");
    for (const tenant of tenants) for (const word of WORDS) await expectGranted(tenant, "*", word);
    for (const grant of ["session:a*", "session:a4*", "docset:d2", "session:*"]) await expectGranted(tenants[0]!, grant, "comet");
    const now = (await indexed())!;
    expect(now.facts - base.facts).toBe(held.size);
    expect(now.rows - base.rows).toBe(held.size);
    expect(now).toEqual({ facts: now.facts, rows: now.facts, placed: now.facts });
    // Tenant a's scopes spread over two blocks of its own.
    const spans = (
      await env.DB.prepare("SELECT tenant_id, span FROM fact_scope_stats WHERE tenant_id IN (?, ?, ?)")
        .bind(...tenants)
        .all<{ tenant_id: string; span: number }>()
    ).results;
    const blocks = new Map<number, Set<string>>();
    for (const s of spans) blocks.set(Math.floor(s.span / 32), (blocks.get(Math.floor(s.span / 32)) ?? new Set()).add(s.tenant_id));
    for (const owners of blocks.values()) expect(owners.size).toBe(1);
    expect(new Set(spans.filter((s) => s.tenant_id === tenants[0]).map((s) => Math.floor(s.span / 32))).size).toBeGreaterThanOrEqual(2);
  });
});
