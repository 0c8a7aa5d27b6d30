import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hashKey, newApiKey } from "../../src/auth/keys";
import { api, createTenant } from "../support/tenants";

/**
 * Issue 11, finding 12: every well-formed unknown key cost a D1 lookup and nothing throttled them.
 * The same wrong key is now answered from a short per-isolate negative cache, and unknown-key
 * attempts are counted per client address (RATE_LIMIT_UNKNOWN_KEY, 30 a minute): past it 429
 * BEM-099 with Retry-After, answered before any lookup.
 */
const from = (address: string, key: string) => api("/v1/models", { key, headers: { "cf-connecting-ip": address } });

async function codeOf(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

/** Makes `key` valid behind the API's back (as another isolate's createKey would). */
async function plant(tenant: string, key: string): Promise<void> {
  await env.DB.prepare("INSERT INTO api_keys (id, tenant_id, key_hash, role, scopes, name, created_at) VALUES (?, ?, ?, 'admin', '[\"*\"]', 'planted', ?)")
    .bind(`key_${crypto.randomUUID()}`, tenant, await hashKey(key), Date.now())
    .run();
}

describe("unknown API keys", () => {
  it("the same unknown key is answered from the negative cache (no D1 lookup), still 401 BEM-021", async () => {
    const t = await createTenant();
    const key = newApiKey();
    const first = await api("/v1/models", { key });
    expect(first.status).toBe(401);
    expect(await codeOf(first)).toBe("BEM-021");
    await plant(t.tenant, key);
    // Within UNKNOWN_KEY_CACHE_MS the isolate does not ask D1 again: the planted row is not seen.
    const again = await api("/v1/models", { key });
    expect(again.status).toBe(401);
    expect(await codeOf(again)).toBe("BEM-021");
  });

  it("past 30 unknown keys a minute from one address: 429 BEM-099 with Retry-After, before any lookup; other addresses and cached keys unaffected", async () => {
    const t = await createTenant();
    const address = `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
    // A valid key this isolate has resolved (cached) keeps working from the throttled address.
    expect((await from(address, t.adminKey)).status).toBe(200);

    for (let i = 0; i < 30; i++) {
      const res = await from(address, newApiKey());
      expect(res.status).toBe(401);
      expect(await codeOf(res)).toBe("BEM-021");
    }
    const over = await from(address, newApiKey());
    expect(over.status).toBe(429);
    expect(await codeOf(over)).toBe("BEM-099");
    expect(over.headers.get("retry-after")).toBe("60");

    // Throttled: no lookup at all — a key made valid in D1 meanwhile is not looked up.
    const planted = newApiKey();
    await plant(t.tenant, planted);
    expect((await from(address, planted)).status).toBe(429);
    expect((await from(address, t.adminKey)).status).toBe(200);
    // Another address is not throttled.
    const elsewhere = await from("192.0.2.77", newApiKey());
    expect(elsewhere.status).toBe(401);
    expect((await from("192.0.2.77", planted)).status).toBe(200);
  });

  it("without cf-connecting-ip (local dev) nothing is throttled: 401 stays 401", async () => {
    for (let i = 0; i < 35; i++) expect((await api("/v1/models", { key: newApiKey() })).status).toBe(401);
  });
});
