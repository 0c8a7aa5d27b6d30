import schemaSql from "../schema.sql?raw";
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

async function shape(db: D1Database) {
  const { results } = await db
    .prepare(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations' ORDER BY type, name",
    )
    .all<{ type: string; name: string; tbl_name: string; sql: string | null }>();
  // ALTER TABLE … RENAME (a fault test renames `facts` and back) rewrites dependent SQL with quoted names: same schema.
  return results.map((r) => ({
    ...r,
    sql:
      r.sql
        ?.replace(/--.*$/gm, "")
        .replace(/"(\w+)"/g, "$1")
        .replace(/\s+/g, " ")
        .trim() ?? null,
  }));
}

describe("schema.sql is the one source of the D1 schema", () => {
  it("migrations produce exactly the schema in schema.sql", async () => {
    await applyD1Migrations(env.SCHEMA_CHECK_DB, []);
    const statements = schemaSql
      .split(/;\s*$/m)
      .map((s) => s.replace(/--.*$/gm, "").trim())
      .filter(Boolean);
    for (const s of statements) await env.SCHEMA_CHECK_DB.prepare(s).run();
    const fromSchema = await shape(env.SCHEMA_CHECK_DB);
    const fromMigrations = await shape(env.DB);
    expect(fromSchema.length).toBeGreaterThan(5);
    expect(fromMigrations).toEqual(fromSchema);
  });
});
