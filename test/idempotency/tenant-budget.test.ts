import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { authHeaders, createKey, createTenant } from "../support/tenants";

/**
 * Idempotency-Key records keep a result (up to ~2 MB) for 24 h in the D1 database every tenant shares,
 * and nothing bounded them per tenant: a member key at 120 requests a minute could write ~240 MB a
 * minute into it. A tenant's kept results are bounded in bytes (MAX_IDEMPOTENCY_BYTES_PER_TENANT);
 * past it a response is still answered whole and its record keeps only that the request ran (a retry
 * is 422 BEM-131, never a second run). Expired records stop counting.
 */
async function call(vars: Record<string, string>, key: string, idem: string, text: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request("http://x/v1/memory/facts", {
      method: "POST",
      headers: authHeaders(key, { "idempotency-key": idem }),
      body: JSON.stringify({ scope: "organization:acme", kind: "note", text }),
    }),
    { ...env, ...vars },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const kept = async (tenant: string) =>
  (await env.DB.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = 'idempotency_bytes'").bind(tenant).first<{ n: number }>())?.n ?? 0;
const facts = async (tenant: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM facts WHERE tenant_id = ?").bind(tenant).first<{ n: number }>())?.n ?? 0;
/** The bytes a record keeps, counted as D1 counts them (UTF-8 of its headers and body). */
const recordBytes = async (tenant: string) =>
  (
    await env.DB.prepare(
      "SELECT SUM(ifnull(length(CAST(headers AS BLOB)), 0) + ifnull(length(CAST(response AS BLOB)), 0)) AS n FROM idempotency_keys WHERE tenant_id = ?",
    )
      .bind(tenant)
      .first<{ n: number | null }>()
  )?.n ?? 0;

describe("a tenant's Idempotency-Key records are bounded in bytes", () => {
  it("past MAX_IDEMPOTENCY_BYTES_PER_TENANT a result is answered whole but not kept (a retry is 422 BEM-131 and runs nothing); expired records stop counting", async () => {
    const t = await createTenant();
    const { key } = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] });
    const vars = { MAX_IDEMPOTENCY_BYTES_PER_TENANT: "3000" };
    const text = (i: number) => `fact ${i} ${"é".repeat(200)}`; // multi-byte: counted in UTF-8 bytes, as D1 counts a row

    // Within the budget: kept and replayed.
    const first = await call(vars, key, "k0", text(0));
    expect(first.status).toBe(201);
    const again = await call(vars, key, "k0", text(0));
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(await first.text());
    expect(await kept(t.tenant)).toBe(await recordBytes(t.tenant));

    // Fill it: each answered whole; the ones past the budget keep only that they ran.
    const answers: Response[] = [];
    for (let i = 1; i < 10; i++) answers.push(await call(vars, key, `k${i}`, text(i)));
    for (const a of answers) expect(a.status).toBe(201);
    expect(await facts(t.tenant)).toBe(10);
    expect(await kept(t.tenant)).toBeLessThanOrEqual(3000);
    expect(await kept(t.tenant)).toBe(await recordBytes(t.tenant));
    const retry = await call(vars, key, "k9", text(9));
    expect(retry.status).toBe(422);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const error = ((await retry.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("BEM-131");
    expect(error.message).toMatch(/ran \(status 201\).*MAX_IDEMPOTENCY_BYTES_PER_TENANT/);
    // It says what happened: keeping this result would have passed the budget (the records held less than it).
    expect(error.message).toMatch(/keeping it would take the tenant's kept Idempotency-Key results past MAX_IDEMPOTENCY_BYTES_PER_TENANT \(3,000 bytes\)/);
    expect(await facts(t.tenant)).toBe(10); // not run again

    // Another tenant is not affected.
    const other = await createTenant();
    const otherKey = (await createKey(other.tenant, { role: "member", scopes: ["organization:acme"] })).key;
    expect((await call(vars, otherKey, "k9", text(9))).status).toBe(201);
    expect((await call(vars, otherKey, "k9", text(9))).headers.get("idempotent-replayed")).toBe("true");

    // Records past their 24 h stop counting: the next result is kept again.
    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = 0 WHERE tenant_id = ?").bind(t.tenant).run();
    expect((await call(vars, key, "k10", text(10))).status).toBe(201);
    const replay = await call(vars, key, "k10", text(10));
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await kept(t.tenant)).toBe(await recordBytes(t.tenant));
    // An expired record taken over by a new request with its key stops counting too.
    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = 0 WHERE tenant_id = ? AND key LIKE '% k10'").bind(t.tenant).run();
    expect((await call(vars, key, "k10", text(11))).status).toBe(201);
    expect(await kept(t.tenant)).toBe(await recordBytes(t.tenant));
    expect(await facts(t.tenant)).toBe(12);
  });

  it("one key cannot fill its tenant's budget: past MAX_IDEMPOTENCY_BYTES_PER_KEY its own results go unkept, another key's are kept", async () => {
    const t = await createTenant();
    const member = (await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] })).key;
    const other = (await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] })).key;
    const vars = { MAX_IDEMPOTENCY_BYTES_PER_KEY: "2000" };
    const text = (i: number) => `fact ${i} ${"é".repeat(200)}`;
    // The member writes on until its own records hold the key's budget: each answered whole.
    for (let i = 0; i < 8; i++) expect((await call(vars, member, `m${i}`, text(i))).status).toBe(201);
    const retry = await call(vars, member, "m7", text(7));
    expect(retry.status).toBe(422);
    const error = ((await retry.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("BEM-131");
    expect(error.message).toMatch(/this API key's kept Idempotency-Key results past MAX_IDEMPOTENCY_BYTES_PER_KEY \(2,000 bytes\)/);
    // The tenant's budget has room: the other key's results are kept and replayed.
    expect((await call(vars, other, "o0", text(100))).status).toBe(201);
    const replayed = await call(vars, other, "o0", text(100));
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    // Each key's count is what its records keep; the tenant's, all of them.
    const perKey = async (kind: string) =>
      (await env.DB.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = ?").bind(t.tenant, kind).first<{ n: number }>())?.n ?? 0;
    const keyIds = (
      await env.DB.prepare("SELECT DISTINCT substr(key, 1, instr(key, ' ') - 1) AS id FROM idempotency_keys WHERE tenant_id = ?")
        .bind(t.tenant)
        .all<{ id: string }>()
    ).results.map((r) => r.id);
    expect(keyIds).toHaveLength(2);
    const counts = await Promise.all(keyIds.map((id) => perKey(`idempotency_bytes:${id}`)));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(await recordBytes(t.tenant));
    expect(Math.max(...counts)).toBeLessThanOrEqual(2000);
    expect(await kept(t.tenant)).toBe(await recordBytes(t.tenant));
  });

  it("the budgets default to the documented vars", () => {
    expect(Number(env.MAX_IDEMPOTENCY_BYTES_PER_TENANT)).toBe(268_435_456);
    expect(Number(env.MAX_IDEMPOTENCY_BYTES_PER_KEY)).toBe(67_108_864);
  });
});
