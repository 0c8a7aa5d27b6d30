import migration from "../../migrations/0016_fact_tokens_per_line.sql?raw";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../src/core/tokens";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { factTokens, quoteLine } from "../../src/memory/facts";
import { MemoryScope } from "../../src/memory/scope";

/** The estimate facts were stored with before 0016: a message of their own, `[kind scope] "text"`. */
const before = (kind: string, scope: string, text: string) => estimateTokens({ role: "system", content: `[${kind} ${scope}] ${quoteLine(text)}` });

/** 0016's statements, each kept to one tenant's rows (the test database is shared). */
const statements = migration
  .split("\n")
  .filter((l) => l.startsWith("UPDATE "))
  .map((l) => `${l.replace(/;\s*$/, "")} WHERE tenant_id = ?`);

describe("migration 0016: stored fact estimates become their line's", () => {
  it("re-estimates rows written before it to no less than the new estimate and at most one token more, and recounts the scope sums (property)", async () => {
    expect(statements).toHaveLength(2);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(
            fc.stringMatching(/^[a-z][a-z0-9_-]{0,31}$/),
            fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,59}$/),
            fc.string({ unit: "binary", minLength: 1, maxLength: 300 }).filter((t) => t.trim() !== ""),
          ),
          { minLength: 1, maxLength: 6 },
        ),
        async (rows) => {
          const tenant = `m-${crypto.randomUUID().slice(0, 8)}`;
          const store = new D1FactsBackend(env.DB, tenant);
          const facts = [];
          for (const [kind, id, text] of rows) facts.push(await store.remember(MemoryScope.new("docset", id), kind, text));
          // As an older build stored them (a tokens-only update fires no trigger: the sums are set by hand).
          for (const f of facts)
            await env.DB.prepare("UPDATE facts SET tokens = ? WHERE id = ?")
              .bind(before(f.kind, f.scope, f.text), f.id)
              .run();
          await env.DB.prepare(
            "UPDATE fact_scope_stats SET tokens = (SELECT SUM(tokens) FROM facts f WHERE f.tenant_id = fact_scope_stats.tenant_id AND f.scope = fact_scope_stats.scope) WHERE tenant_id = ?",
          )
            .bind(tenant)
            .run();

          for (const s of statements) await env.DB.prepare(s).bind(tenant).run();

          for (const f of facts) {
            const row = await env.DB.prepare("SELECT tokens FROM facts WHERE id = ?").bind(f.id).first<{ tokens: number }>();
            expect(row!.tokens).toBeGreaterThanOrEqual(factTokens(f.text));
            expect(row!.tokens).toBeLessThanOrEqual(factTokens(f.text) + 1);
          }
          const { results } = await env.DB.prepare(
            "SELECT s.tokens AS kept, (SELECT SUM(tokens) FROM facts f WHERE f.tenant_id = s.tenant_id AND f.scope = s.scope) AS sum FROM fact_scope_stats s WHERE s.tenant_id = ?",
          )
            .bind(tenant)
            .all<{ kept: number; sum: number }>();
          for (const r of results) expect(r.kept).toBe(r.sum);
        },
      ),
      { seed: 16_0016, numRuns: 30 },
    );
  });
});
