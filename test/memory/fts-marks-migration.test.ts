import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { markOlderFacts } from "../../src/memory/fact-backfill";
import { tenantMark } from "../../src/memory/tenant-words";

// Migration 0035 makes marks word characters in facts_fts. Facts written before it hold an fts_text split at
// their vowel signs: they must be found by their words once the hourly purge has marked them again, and the
// others keep their index rows. A database of its own: 0035 rebuilds the whole index.

const db = () => env.MARKS_MIGRATION_DB;
const BEFORE = env.TEST_MIGRATIONS.filter((m) => m.name < "0035");
const AFTER = env.TEST_MIGRATIONS.filter((m) => m.name >= "0035");

/** A fact as the code before 0035 wrote it: fts_text with words split at marks. */
let seq = 0;
async function oldFact(tenant: string, scope: string, text: string): Promise<void> {
  seq++;
  const mark = await tenantMark(tenant);
  const ftsText = Array.from(text.normalize("NFKC").matchAll(/[\p{L}\p{N}\p{Co}]+/gu), (m) => mark + m[0]).join(" ");
  await db()
    .prepare(
      "INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, updated_at, version, fts_text) VALUES (?, ?, ?, 'note', ?, 5, ?, ?, 1, ?)",
    )
    .bind(`f${seq}`, tenant, scope, text, seq, seq, ftsText)
    .run();
}

const texts = (hits: { text: string }[]) => hits.map((h) => h.text).sort();

describe("migration 0035: marks are word characters in facts_fts", () => {
  it("a Hindi fact written before it is found by its word once marked again; an ASCII one keeps its index row throughout", async () => {
    await applyD1Migrations(db(), BEFORE);
    await oldFact("t-a", "docset:d", "रवि को हिन्दी संगीत पसंद है");
    await oldFact("t-a", "docset:d", "the comet has a long tail");
    await applyD1Migrations(db(), AFTER);

    const facts = new D1FactsBackend(db(), "t-a", () => 1_000);
    const d = { owner: "t-a", scope: "docset:d" };
    expect(texts(await facts.search([d], "comet", 10))).toEqual(["the comet has a long tail"]);
    const unmarked = await db().prepare("SELECT text FROM facts WHERE fts_text IS NULL").all<{ text: string }>();
    expect(unmarked.results.map((r) => r.text)).toEqual(["रवि को हिन्दी संगीत पसंद है"]);

    while ((await markOlderFacts(db())) > 0);
    expect(texts(await facts.search([d], "हिन्दी", 10))).toEqual(["रवि को हिन्दी संगीत पसंद है"]);
    expect(texts(await facts.search([d], "comet", 10))).toEqual(["the comet has a long tail"]);
    const rows = await db().prepare("SELECT (SELECT COUNT(*) FROM facts) AS facts, (SELECT COUNT(*) FROM facts_fts) AS rows").first();
    expect(rows).toEqual({ facts: 2, rows: 2 });
  });
});
