import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { InMemoryStore, type BaseStore } from "@langchain/langgraph-checkpoint";
import worker from "../../src/index";
import { describe, expect, it } from "vitest";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { api, createTenant } from "../support/tenants";
import { BASE_URL, sdkClient, workerFetch } from "./support";

/**
 * Issue #24.9: the store reads filters as LangGraph's InMemoryStore does ($in / $nin,
 * `{field: null}`), refuses what it does not support with a coded 400 instead of an empty
 * result, and honours `ttl` with `refreshTtl`. Issue #24.8: EdgeweaveStore.batch splits what
 * does not fit one request (100 ops, 1 MiB) and says which limit an op passed.
 */
const storeFor = (key: string, counter?: { calls: number }) => new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch(counter) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function filtered(store: BaseStore, filter: Record<string, unknown>): Promise<string[]> {
  return (await store.search(["docset", "f"], { filter, limit: 100 })).map((i) => i.key).sort();
}

describe("store filters as InMemoryStore reads them", () => {
  it("$in, $nin, {field: null}, $ne on a missing field, booleans and numbers: the same keys as InMemoryStore", async () => {
    const t = await createTenant();
    const ours = storeFor(t.adminKey);
    const reference = new InMemoryStore();
    const items: Record<string, Record<string, unknown>> = {
      a: { color: "red", n: 1, flag: true, gone: null },
      b: { color: "blue", n: 2, flag: false },
      c: { color: "green", n: 3, flag: 1 },
      d: { n: "3", other: "x" },
    };
    for (const store of [ours, reference]) for (const [k, v] of Object.entries(items)) await store.put(["docset", "f"], k, v);
    const filters: Record<string, unknown>[] = [
      { color: { $in: ["red", "green"] } },
      { color: { $nin: ["red", "green"] } },
      { n: { $in: [1, 3] } },
      { gone: null },
      { color: { $ne: "red" } },
      { flag: true },
      { flag: 1 },
      { n: 3 },
      { color: { $in: [] } },
      { color: { $eq: "red" }, n: { $lte: 1 } },
    ];
    for (const f of filters) expect(await filtered(ours, f), JSON.stringify(f)).toEqual(await filtered(reference, f));
    // And they are not all empty: the operators do filter.
    expect(await filtered(ours, { color: { $in: ["red", "green"] } })).toEqual(["a", "c"]);
    expect(await filtered(ours, { gone: null })).toEqual(["a"]);
    // One documented difference: $gt…$lte compare numbers with numbers (InMemoryStore runs Number() on both, so "3" > 1).
    expect(await filtered(ours, { n: { $gt: 1 } })).toEqual(["b", "c"]);
  });

  it("an operator it does not support, or $in without a list, is 400 BEM-146 (never a silent empty result)", async () => {
    const t = await createTenant();
    for (const filter of [{ color: { $regex: "r.*" } }, { color: { $exists: true } }, { color: { $in: "red" } }, { n: { $gt: true } }]) {
      const res = await api("/v1/langgraph/store/items/search", { key: t.adminKey, body: { namespace_prefix: ["docset"], filter } });
      expect(res.status, JSON.stringify(filter)).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-146");
    }
  });

  it("ttl (minutes) expires an item; a refreshing read (the default) renews it, refresh_ttl=false does not", async () => {
    const t = await createTenant();
    const client = sdkClient(t.adminKey);
    const ns = ["docset", "ttl"];
    const ttl = 0.05; // 3 s
    await client.store.putItem(ns, "renewed", { v: 1 }, { ttl });
    await client.store.putItem(ns, "read-only", { v: 2 }, { ttl });
    await client.store.putItem(ns, "forever", { v: 3 });
    await sleep(1500);
    expect(await client.store.getItem(ns, "renewed")).toMatchObject({ value: { v: 1 } });
    expect(await client.store.getItem(ns, "read-only", { refreshTtl: false })).toMatchObject({ value: { v: 2 } });
    await sleep(2200); // 3.7 s after the put: past read-only's TTL; renewed lives to 4.5 s
    expect(await client.store.getItem(ns, "read-only")).toBeNull();
    expect(await client.store.getItem(ns, "renewed")).toMatchObject({ value: { v: 1 } });
    const found = await client.store.searchItems(ns, { limit: 10 });
    expect(found.items.map((i) => i.key).sort()).toEqual(["forever", "renewed"]);
    expect((await client.store.listNamespaces()).namespaces).toEqual([ns]);
    // The hourly cron removes what expired (reads skipped it already), and the tenant's count follows.
    const count = async () =>
      (await env.DB.prepare(`SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = 'store_items'`).bind(t.tenant).first<{ n: number }>())?.n;
    expect(await count()).toBe(3);
    const ec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "17 * * * *" }), env, ec);
    await waitOnExecutionContext(ec);
    expect(await count()).toBe(2);
  });
});

describe("every field a store request carries does something", () => {
  it("a field the route does not take is 400 BEM-011 naming it (a camelCase namespacePrefix searched the whole tenant)", async () => {
    const t = await createTenant();
    await storeFor(t.adminKey).put(["docset", "a"], "k", { v: 1 });
    await storeFor(t.adminKey).put(["docset", "b"], "k", { v: 1 });
    const sent: [string, string, unknown, string][] = [
      ["POST", "/v1/langgraph/store/items/search", { namespacePrefix: ["docset", "a"] }, "namespacePrefix"],
      ["PUT", "/v1/langgraph/store/items", { namespace: ["docset", "a"], key: "k", value: { v: 2 }, ttl_minutes: 5 }, "ttl_minutes"],
      ["DELETE", "/v1/langgraph/store/items", { namespace: ["docset", "a"], key: "k", value: null }, "value"],
      ["POST", "/v1/langgraph/store/namespaces", { prefix: ["docset"], maxDepth: 1 }, "maxDepth"],
      ["POST", "/v1/langgraph/store/batch", { ops: [{ op: "search", namespace_prefix: ["docset"], refreshTtl: false }] }, "refreshTtl"],
      ["POST", "/v1/langgraph/store/batch", { ops: [{ op: "put", namespace: ["docset", "a"], key: "k", value: { v: 2 }, tll: 5 }] }, "tll"],
    ];
    for (const [method, path, body, field] of sent) {
      const res = await api(path, { method, key: t.adminKey, body });
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("BEM-011");
      expect(error.message).toContain(field);
    }
    expect((await storeFor(t.adminKey).get(["docset", "a"], "k"))?.value).toEqual({ v: 1 });
    // GET's query alike: a camelCase refreshTtl=false renewed the TTL it meant to leave.
    const res = await api("/v1/langgraph/store/items?namespace=docset.a&key=k&refreshTtl=false", { key: t.adminKey });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("refreshTtl");
  });

  it("a ttl past 1,000 years is 400 BEM-011 (1e300 was stored and the item was never found again); the longest one reads back, renewed", async () => {
    const t = await createTenant();
    const put = (key: string, ttl: number) =>
      api("/v1/langgraph/store/items", { method: "PUT", key: t.adminKey, body: { namespace: ["docset", "ttl"], key, value: { v: 1 }, ttl } });
    for (const ttl of [1e300, 1e15, 525_600_001]) {
      const res = await put("far", ttl);
      expect(res.status, String(ttl)).toBe(400);
      expect(((await res.json()) as { error: { code: string; message: string } }).error.message).toContain("ttl");
    }
    expect((await put("longest", 525_600_000)).status).toBe(204);
    for (let i = 0; i < 2; i++) expect((await storeFor(t.adminKey).get(["docset", "ttl"], "longest"))?.value).toEqual({ v: 1 });
    expect(await storeFor(t.adminKey).get(["docset", "ttl"], "far")).toBeNull();
  });

  it("a batch get takes refresh_ttl as GET /store/items does: false leaves the item's expiry where it was", async () => {
    const t = await createTenant();
    const ns = ["docset", "ttl"];
    expect(
      (await api("/v1/langgraph/store/items", { method: "PUT", key: t.adminKey, body: { namespace: ns, key: "k", value: { v: 1 }, ttl: 10 } })).status,
    ).toBe(204);
    const expiry = async () =>
      (await env.DB.prepare(`SELECT expires_at FROM store_items WHERE tenant_id = ? AND key = 'k'`).bind(t.tenant).first<{ expires_at: number }>())?.expires_at;
    const before = await expiry();
    await sleep(20);
    const res = await api("/v1/langgraph/store/batch", { key: t.adminKey, body: { ops: [{ op: "get", namespace: ns, key: "k", refresh_ttl: false }] } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { results: unknown[] }).results).toMatchObject([{ key: "k" }]);
    expect(await expiry()).toBe(before);
    await api("/v1/langgraph/store/batch", { key: t.adminKey, body: { ops: [{ op: "get", namespace: ns, key: "k" }] } });
    expect(await expiry()).toBeGreaterThan(before!);
  });
});

describe("EdgeweaveStore.batch within the server's caps", () => {
  it("150 puts at once (Promise.all in a node) and 4 × 300 KB puts go out in as many requests as the caps need", async () => {
    const t = await createTenant();
    const counter = { calls: 0 };
    const store = storeFor(t.adminKey, counter);
    await store.batch(Array.from({ length: 150 }, (_, i) => ({ namespace: ["docset", "many"], key: `k${i}`, value: { i } })));
    expect(counter.calls).toBe(2);
    expect((await store.search(["docset", "many"], { limit: 1000 })).length).toBe(150);
    counter.calls = 0;
    const big = "x".repeat(300_000);
    await Promise.all([0, 1, 2, 3].map((i) => store.put(["docset", "big"], `b${i}`, { big })));
    expect(counter.calls).toBeGreaterThanOrEqual(2);
    const got = await store.batch([0, 1, 2, 3].map((i) => ({ namespace: ["docset", "big"], key: `b${i}` })));
    expect(got.map((g) => g?.value.big === big)).toEqual([true, true, true, true]);
  });

  it("an item over the request cap is refused before anything is sent, naming the cap; a 17-label namespace names the label cap", async () => {
    const t = await createTenant();
    const counter = { calls: 0 };
    const store = storeFor(t.adminKey, counter);
    await expect(store.put(["docset", "huge"], "h", { big: "x".repeat(1_100_000) })).rejects.toMatchObject({ status: 413, code: "BEM-013" });
    expect(counter.calls).toBe(0);
    const deep = Array.from({ length: 17 }, (_, i) => `l${i}`);
    const res = await api("/v1/langgraph/store/batch", { key: t.adminKey, body: { ops: [{ op: "put", namespace: deep, key: "k", value: {} }] } });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("BEM-011");
    expect(error.message).toMatch(/ops\.0\.namespace: .*16/);
  });
});
