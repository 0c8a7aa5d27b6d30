/**
 * A thread object written by the release before numbered sends (object schema v7: pending_usage and
 * the pending list entry, no sending_usage) upgrades in place: its pending rows are sent by the new
 * code once, as they were, and the thread's list entry moves.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION } from "../../src/thread/sql-schema";
import { threadObjectName } from "../../src/thread/thread-id";

const V7 = 7;
const usage = (tenant: string) =>
  env.DB.prepare(
    "SELECT model, SUM(requests) AS requests, SUM(prompt_tokens) AS prompt_tokens, SUM(cost) AS cost FROM usage WHERE tenant_id = ? GROUP BY model ORDER BY model",
  )
    .bind(tenant)
    .all<{ model: string; requests: number; prompt_tokens: number; cost: number }>();

describe("bookkeeping at object schema v7", () => {
  it("an object at v7 with pending rows upgrades and sends them once, with its list entry", async () => {
    expect(SCHEMA_VERSION).toBeGreaterThan(V7);
    const tenant = `bk7-${crypto.randomUUID().slice(0, 8)}`;
    const thread = `thread-${crypto.randomUUID().slice(0, 8)}`;
    // A fresh stub for each call: one that saw its object reset is broken.
    const stub = () => env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, thread)));
    const at = 1_790_000_000_000;
    await runInDurableObject(stub(), async (_o, state) => {
      await state.storage.deleteAll();
      const sql = state.storage.sql;
      for (const step of MIGRATIONS.slice(0, V7)) for (const ddl of step) sql.exec(ddl);
      sql.exec("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", String(V7));
      const row = (model: string, requests: number, tokens: number, cost: number) =>
        sql.exec(
          "INSERT INTO pending_usage (tenant_id, day, model, cause, requests, estimated_requests, prompt_tokens, completion_tokens, cost) VALUES (?, '2026-12-01', ?, 'turn', ?, 0, ?, 1, ?)",
          tenant,
          model,
          requests,
          tokens,
          cost,
        );
      row("m-a", 3, 30, 0.5);
      row("m-b", 1, 7, 0.25);
      sql.exec("INSERT INTO meta (key, value) VALUES ('pending_listing', ?)", JSON.stringify({ tenant, threadId: thread, at }));
    });
    // The instance that ran at v7 goes (a deploy); the next one migrates its storage on construction.
    await runInDurableObject(stub(), (_o, state) => state.abort("deploy")).catch(() => undefined);
    await stub().settled();
    await runDurableObjectAlarm(stub());
    const expected = [
      { model: "m-a", requests: 3, prompt_tokens: 30, cost: 0.5 },
      { model: "m-b", requests: 1, prompt_tokens: 7, cost: 0.25 },
    ];
    expect((await usage(tenant)).results).toEqual(expected);
    const listed = await env.DB.prepare("SELECT updated_at FROM threads WHERE tenant_id = ? AND thread_id = ?")
      .bind(tenant, thread)
      .first<{ updated_at: number }>();
    expect(listed?.updated_at).toBe(at);
    const left = await runInDurableObject(stub(), (_o, state) => ({
      version: state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").one().value,
      pending: state.storage.sql.exec<{ n: number }>("SELECT (SELECT COUNT(*) FROM pending_usage) + (SELECT COUNT(*) FROM sending_usage) AS n").one().n,
    }));
    expect(left).toEqual({ version: String(SCHEMA_VERSION), pending: 0 });
    // Nothing is sent twice.
    await runDurableObjectAlarm(stub());
    expect((await usage(tenant)).results).toEqual(expected);
  });
});
