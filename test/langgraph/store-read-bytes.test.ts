import { describe, expect, it } from "vitest";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { api, createTenant } from "../support/tenants";
import { BASE_URL, workerFetch } from "./support";

/**
 * A store batch is charged one request per 10 ops, and each of its 100 ops may be a search of up to
 * 1,000 items of up to ~1 MiB: a member key's one request made the Worker read and answer the same
 * items once per op (here ~51 MiB for 20 searches of 2.6 MiB; at the caps, gigabytes, past a
 * Worker's memory). A request's reads now return at most MAX_STORE_READ_BYTES of values, each read
 * op an equal share: past it 413 BEM-133, nothing of the batch stored.
 */
const NS = ["docset", "big"];
const value = (i: number) => ({ i, text: "x".repeat(870_000) });

async function bigItems(key: string) {
  for (let i = 0; i < 3; i++) {
    const res = await api("/v1/langgraph/store/batch", { key, body: { ops: [{ op: "put", namespace: NS, key: `k${i}`, value: value(i) }] } });
    expect(res.status).toBe(200);
  }
}

describe("LangGraph store reads are bounded in bytes per request", () => {
  it("twenty searches of the same 2.6 MiB in one batch are 413 BEM-133 and store nothing; one search returns them all", async () => {
    const t = await createTenant({ memberScopes: ["docset:*"] });
    await bigItems(t.adminKey);
    const search = { op: "search", namespace_prefix: NS, limit: 10 };
    const ops = [{ op: "put", namespace: NS, key: "planted", value: { small: true } }, ...Array.from({ length: 20 }, () => search)];
    const res = await api("/v1/langgraph/store/batch", { key: t.memberKey, body: { ops } });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("BEM-133");
    expect(body.error.message).toContain("MAX_STORE_READ_BYTES");
    const planted = await api(`/v1/langgraph/store/items?namespace=${NS.join(".")}&key=planted`, { key: t.memberKey });
    expect(await planted.json()).toBeNull();
    // Alone, the same search fits: every item comes back whole.
    const one = await api("/v1/langgraph/store/items/search", { key: t.memberKey, body: { namespace_prefix: NS, limit: 10 } });
    expect(one.status).toBe(200);
    const items = ((await one.json()) as { items: { key: string; value: { text: string } }[] }).items;
    expect(items.map((i) => i.key).sort()).toEqual(["k0", "k1", "k2"]);
    expect(items.every((i) => i.value.text.length === 870_000)).toBe(true);
  });

  it("a batch of gets shares the budget the same way; small reads are untouched", async () => {
    const t = await createTenant({ memberScopes: ["docset:*"] });
    await bigItems(t.adminKey);
    const gets = Array.from({ length: 40 }, (_, i) => ({ op: "get", namespace: NS, key: `k${i % 3}` }));
    const res = await api("/v1/langgraph/store/batch", { key: t.memberKey, body: { ops: gets } });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-133");
    const few = await api("/v1/langgraph/store/batch", { key: t.memberKey, body: { ops: gets.slice(0, 3) } });
    expect(few.status).toBe(200);
    expect(((await few.json()) as { results: ({ key: string } | null)[] }).results.map((r) => r?.key)).toEqual(["k0", "k1", "k2"]);
  });
});

describe("namespace lists count against the same budget", () => {
  it("eight lists of the same ~3 MiB of namespaces in one batch are 413 BEM-133; one list returns them all", async () => {
    // A namespace is up to 16 labels of 256 characters, a list up to 1,000 of them: ~4 MiB an op, 100 ops a request.
    const t = await createTenant({ memberScopes: ["docset:*"] });
    const label = (c: string) => c.repeat(250);
    for (let b = 0; b < 10; b++) {
      const ops = Array.from({ length: 100 }, (_, i) => ({
        op: "put",
        namespace: ["docset", "many", ...Array.from({ length: 13 }, (_, j) => label("abcdefghijklm"[j]!)), `n${b * 100 + i}`],
        key: "k",
        value: {},
      }));
      expect((await api("/v1/langgraph/store/batch", { key: t.adminKey, body: { ops } })).status).toBe(200);
    }
    const list = { op: "list_namespaces", prefix: ["docset", "many"], limit: 1000 };
    const res = await api("/v1/langgraph/store/batch", { key: t.memberKey, body: { ops: Array.from({ length: 8 }, () => list) } });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-133");
    const one = await api("/v1/langgraph/store/namespaces", { key: t.memberKey, body: { prefix: ["docset", "many"], limit: 1000 } });
    expect(one.status).toBe(200);
    expect(((await one.json()) as { namespaces: string[][] }).namespaces).toHaveLength(1000);
  });
});

describe("EdgeweaveStore and the read budget", () => {
  it("a batch of reads past it is sent again in halves: every get comes back, in order", async () => {
    const t = await createTenant({ memberScopes: ["docset:*"] });
    await bigItems(t.adminKey);
    const store = new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: t.memberKey, fetch: workerFetch() });
    const keys = Array.from({ length: 40 }, (_, i) => `k${i % 3}`);
    const items = await store.batch(keys.map((key) => ({ namespace: NS, key })));
    expect(items.map((i) => i?.key)).toEqual(keys);
    expect(items.every((i) => (i?.value as { text?: string } | undefined)?.text?.length === 870_000)).toBe(true);
  });
});
