import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FTS_SPAN } from "../../src/memory/bm25-search";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { markOlderFacts } from "../../src/memory/fact-backfill";
import { MemoryScope } from "../../src/memory/scope";

// Migration 0018 gives each (tenant, scope) a span of facts_fts rowids. Facts written before it (under
// 0013's triggers, rowid = facts.rowid) must be searchable after it, and written, replaced and deleted
// facts keep the index exact. A database of its own: 0018 rebuilds the whole index.

const db = () => env.MIGRATION_CHECK_DB;
const BEFORE = env.TEST_MIGRATIONS.filter((m) => m.name < "0018");
const M0018 = env.TEST_MIGRATIONS.filter((m) => m.name.startsWith("0018"));
const AFTER = env.TEST_MIGRATIONS.filter((m) => m.name >= "0019");

/** A fact as the code before 0018 wrote it (the insert trigger of that time fills facts_fts and the stats). */
let seq = 0;
async function oldFact(tenant: string, scope: string, text: string, extra: { key?: string; expires_at?: number } = {}): Promise<void> {
  seq++;
  await db()
    .prepare(
      "INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, key, expires_at, updated_at, version) VALUES (?, ?, ?, 'note', ?, 5, ?, ?, ?, ?, 1)",
    )
    .bind(`f${seq}`, tenant, scope, text, seq, extra.key ?? null, extra.expires_at ?? null, seq)
    .run();
}

const texts = (hits: { text: string }[]) => hits.map((h) => h.text).sort();

/** How many facts there are, how many rows facts_fts has, and how many facts it holds at their scope's span with their marked text. */
const indexed = () =>
  db()
    .prepare(
      "SELECT (SELECT COUNT(*) FROM facts) AS facts, (SELECT COUNT(*) FROM facts_fts) AS rows, " +
        `(SELECT COUNT(*) FROM facts f JOIN fact_scope_stats s USING (tenant_id, scope) JOIN facts_fts x ON x.rowid = s.span * ${FTS_SPAN} + f.rowid WHERE x.text = f.fts_text) AS placed`,
    )
    .first<{ facts: number; rows: number; placed: number }>();

describe("migration 0018: facts_fts rowids by scope span", () => {
  it("keeps every existing fact searchable, gives each tenant blocks of its own, and keeps the index exact on later writes", async () => {
    expect(M0018).toHaveLength(1);
    await applyD1Migrations(db(), BEFORE);
    // t-many has 40 scopes (two blocks of 32), t-one one scope, the operator the system scope.
    for (let i = 0; i < 40; i++) await oldFact("t-many", `docset:d${String(i).padStart(2, "0")}`, `comet report ${i}`);
    await oldFact("t-many", "docset:d00", "comet tail and dust");
    await oldFact("t-many", "docset:d00", "keyed comet", { key: "k" });
    await oldFact("t-many", "docset:d00", "expired comet", { expires_at: 1 });
    await oldFact("t-one", "docset:d00", "comet of the other tenant");
    await oldFact("", "system", "system comet rule");

    await applyD1Migrations(db(), M0018);
    // Read and written by today's code, so on today's schema; the hourly purge indexes them under their tenants' marks (0031).
    await applyD1Migrations(db(), AFTER);
    while ((await markOlderFacts(db())) > 0);

    const spans = (
      await db().prepare("SELECT tenant_id, scope, span FROM fact_scope_stats ORDER BY span").all<{ tenant_id: string; scope: string; span: number }>()
    ).results;
    expect(spans).toHaveLength(42);
    // A block of 32 spans belongs to one tenant.
    const owner = new Map<number, string>();
    for (const s of spans) {
      expect(owner.get(Math.floor(s.span / 32)) ?? s.tenant_id).toBe(s.tenant_id);
      owner.set(Math.floor(s.span / 32), s.tenant_id);
      expect(s.span).toBeGreaterThanOrEqual(32);
    }
    // Every fact is in the index once, at its scope's span.
    expect(await indexed()).toEqual({ facts: 45, rows: 45, placed: 45 });

    const many = new D1FactsBackend(db(), "t-many", () => 1_000);
    const d00 = { owner: "t-many", scope: "docset:d00" };
    expect(texts(await many.search([d00], "comet", 10))).toEqual(["comet report 0", "comet tail and dust", "keyed comet"]);
    expect(
      texts(
        await many.search(
          [
            { owner: "t-many", scope: "docset:d39" },
            { owner: "", scope: "system" },
          ],
          "comet",
          10,
        ),
      ),
    ).toEqual(["comet report 39", "system comet rule"]);
    expect(await many.searchGranted(["*"], false, "comet", 100)).toHaveLength(42);
    expect(texts(await new D1FactsBackend(db(), "t-one", () => 1_000).searchGranted(["*"], true, "comet", 100))).toEqual([
      "comet of the other tenant",
      "system comet rule",
    ]);

    // Later writes, by today's code over today's schema (0030 added the facts' vectors it writes).
    await applyD1Migrations(
      db(),
      env.TEST_MIGRATIONS.filter((m) => m.name > "0018"),
    );
    // A new scope of t-many continues its second block; a new tenant opens a block past every span.
    await many.remember(MemoryScope.new("docset", "d40"), "note", "comet fresh");
    await new D1FactsBackend(db(), "t-new", () => 1_000).remember(MemoryScope.new("docset", "d00"), "note", "comet newcomer");
    const spanOf = async (tenant: string, scope: string) =>
      (await db().prepare("SELECT span FROM fact_scope_stats WHERE tenant_id = ? AND scope = ?").bind(tenant, scope).first<{ span: number }>())!.span;
    const last = await spanOf("t-many", "docset:d39");
    expect(await spanOf("t-many", "docset:d40")).toBe(last + 1);
    expect(await spanOf("t-new", "docset:d00")).toBe(Math.ceil((Math.max(...spans.map((s) => s.span)) + 1) / 32) * 32);
    // A replaced text and a deleted fact leave the index as the facts are.
    await many.remember(MemoryScope.new("docset", "d00"), "note", "keyed meteor", { key: "k" });
    const gone = (await many.search([d00], "tail", 1))[0]!;
    expect(await many.forget(gone.id)).toBe(true);
    expect(texts(await many.search([d00], "comet meteor", 10))).toEqual(["comet report 0", "keyed meteor"]);
    expect(texts(await many.search([{ owner: "t-many", scope: "docset:d40" }], "comet", 10))).toEqual(["comet fresh"]);
    expect(await indexed()).toEqual({ facts: 46, rows: 46, placed: 46 });
  });
});
