import { describe, expect, it } from "vitest";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { api, createKey, createTenant } from "../support/tenants";
import { BASE_URL, sdkClient, workerFetch } from "./support";

const storeFor = (key: string) => new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch() });

describe("EdgeweaveStore over tenant-scoped D1 items", () => {
  it("put / get / upsert / delete", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey);
    expect(await store.get(["organization", "acme"], "style")).toBeNull();
    await store.put(["organization", "acme"], "style", { text: "short sentences", v: 1 });
    const first = await store.get(["organization", "acme"], "style");
    expect(first).toMatchObject({ namespace: ["organization", "acme"], key: "style", value: { text: "short sentences", v: 1 } });
    expect(first?.createdAt).toBeInstanceOf(Date);
    await store.put(["organization", "acme"], "style", { text: "shorter", v: 2 });
    const second = await store.get(["organization", "acme"], "style");
    expect(second?.value).toEqual({ text: "shorter", v: 2 });
    expect(second?.createdAt.getTime()).toBe(first?.createdAt.getTime());
    await store.delete(["organization", "acme"], "style");
    expect(await store.get(["organization", "acme"], "style")).toBeNull();
  });

  it("search: namespace prefix, the filter operators, limit and offset", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey);
    const ns = ["docset", "d1"];
    for (const [key, score, color] of [
      ["a", 1, "red"],
      ["b", 3, "blue"],
      ["c", 5, "red"],
      ["d", 7, "green"],
    ] as const) {
      await store.put(ns, key, { score, color, meta: { tier: score > 4 ? "high" : "low" }, done: score === 3 });
    }
    await store.put(["docset", "d1", "deeper"], "e", { score: 9, color: "red" });
    await store.put(["docset", "d10"], "not-under-d1", { score: 1, color: "red" });
    const keys = async (prefix: string[], filter?: Record<string, unknown>, more: { limit?: number; offset?: number } = {}) =>
      (await store.search(prefix, { filter, ...more })).map((i) => i.key).sort();
    expect(await keys(ns)).toEqual(["a", "b", "c", "d", "e"]);
    expect(await keys(["docset"])).toEqual(["a", "b", "c", "d", "e", "not-under-d1"]);
    expect(await keys(ns, { color: "red" })).toEqual(["a", "c", "e"]);
    expect(await keys(ns, { color: { $eq: "red" } })).toEqual(["a", "c", "e"]);
    expect(await keys(ns, { color: { $ne: "red" } })).toEqual(["b", "d"]);
    expect(await keys(ns, { score: { $gt: 3 } })).toEqual(["c", "d", "e"]);
    expect(await keys(ns, { score: { $gte: 3 } })).toEqual(["b", "c", "d", "e"]);
    expect(await keys(ns, { score: { $lt: 3 } })).toEqual(["a"]);
    expect(await keys(ns, { score: { $lte: 3 } })).toEqual(["a", "b"]);
    expect(await keys(ns, { score: { $gt: 1, $lt: 7 }, color: "red" })).toEqual(["c"]);
    expect(await keys(ns, { "meta.tier": "high" })).toEqual(["c", "d"]);
    expect(await keys(ns, { done: true })).toEqual(["b"]);
    expect((await store.search(ns, { limit: 2 })).length).toBe(2);
    const all = (await store.search(ns, { limit: 10 })).map((i) => i.key);
    expect((await store.search(ns, { limit: 2, offset: 2 })).map((i) => i.key)).toEqual(all.slice(2, 4));
  });

  it("listNamespaces: prefix, suffix with wildcards, maxDepth", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey);
    for (const ns of [
      ["organization", "acme"],
      ["organization", "acme", "notes"],
      ["organization", "beta", "notes"],
      ["docset", "d1"],
    ]) {
      await store.put(ns, "k", { x: 1 });
    }
    expect(await store.listNamespaces()).toEqual([
      ["docset", "d1"],
      ["organization", "acme"],
      ["organization", "acme", "notes"],
      ["organization", "beta", "notes"],
    ]);
    expect(await store.listNamespaces({ prefix: ["organization"] })).toHaveLength(3);
    expect(await store.listNamespaces({ suffix: ["notes"] })).toEqual([
      ["organization", "acme", "notes"],
      ["organization", "beta", "notes"],
    ]);
    expect(await store.listNamespaces({ prefix: ["organization", "*", "notes"] })).toHaveLength(2);
    expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([["docset"], ["organization"]]);
    expect(await store.listNamespaces({ limit: 1, offset: 1 })).toEqual([["organization", "acme"]]);
  });

  it("namespaces are scopes: a member reaches only what its grants cover, in every operation", async () => {
    const t = await createTenant();
    const admin = storeFor(t.adminKey);
    await admin.put(["organization", "acme"], "a", { v: 1 });
    await admin.put(["organization", "other"], "o", { v: 1 });
    await admin.put(["docset", "d1", "sub"], "d", { v: 1 });
    const member = await createKey(t.tenant, { role: "member", scopes: ["organization:acme", "docset:*"] });
    const store = storeFor(member.key);
    expect((await store.get(["organization", "acme"], "a"))?.value).toEqual({ v: 1 });
    await expect(store.get(["organization", "other"], "o")).rejects.toMatchObject({ status: 403, code: "BEM-023" });
    await expect(store.put(["organization", "other"], "x", { v: 2 })).rejects.toMatchObject({ code: "BEM-023" });
    await expect(store.delete(["organization", "other"], "o")).rejects.toMatchObject({ code: "BEM-023" });
    expect((await store.search(["organization"])).map((i) => i.key)).toEqual(["a"]);
    expect((await store.search([])).map((i) => i.key).sort()).toEqual(["a", "d"]);
    expect(await store.listNamespaces()).toEqual([
      ["docset", "d1", "sub"],
      ["organization", "acme"],
    ]);
    expect((await admin.get(["organization", "other"], "o"))?.value).toEqual({ v: 1 });
  });

  it("search and listNamespaces reach exactly what get does: a bare name, or an id with '.', grants no [name, id, …] namespace", async () => {
    const t = await createTenant();
    const admin = storeFor(t.adminKey);
    for (const ns of [["organization"], ["organization", "acme"], ["organization", "acme", "notes"], ["organization", "ac"], ["docset", "d1"]])
      await admin.put(ns, "k", { secret: ns.join("/") });
    const reach = async (scopes: string[]) => {
      const store = storeFor((await createKey(t.tenant, { role: "member", scopes })).key);
      const found = (await store.search([], { limit: 100 })).map((i) => i.namespace.join("."));
      const listed = (await store.listNamespaces()).map((ns) => ns.join("."));
      expect(listed.sort()).toEqual([...new Set(found)].sort());
      // get agrees with search: everything search returned is readable one by one.
      for (const ns of listed) expect(await store.get(ns.split("."), "k")).not.toBeNull();
      return listed.sort();
    };
    // A bare scope name is the one-label namespace: ["organization", "acme"] is organization:acme, not granted by "organization".
    expect(await reach(["organization"])).toEqual(["organization"]);
    // "organization:acme.*" grants ids starting "acme." (no label can), not organization:acme's ["organization","acme","notes"].
    expect(await reach(["organization:acme.*"])).toEqual([]);
    expect(await reach(["organization:acme.notes"])).toEqual([]);
    expect(await reach(["organization:acme:*", "organization:ac:me"])).toEqual([]);
    expect(await reach(["organization:ac*"])).toEqual(["organization.ac", "organization.acme", "organization.acme.notes"]);
    expect(await reach(["organization:acme"])).toEqual(["organization.acme", "organization.acme.notes"]);
  });

  it("a batch is all or nothing: an op refused by the grants, a bad filter or a bad key stores none of the batch's puts", async () => {
    const t = await createTenant();
    const { key } = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] });
    const batch = (ops: unknown[]) => api("/v1/langgraph/store/batch", { key, body: { ops } });
    const put = (k: string) => ({ op: "put", namespace: ["organization", "acme"], key: k, value: { v: 1 } });
    const refusals: [unknown, number, string][] = [
      [{ op: "put", namespace: ["organization", "other"], key: "x", value: { v: 1 } }, 403, "BEM-023"],
      [{ op: "get", namespace: ["organization", "other"], key: "x" }, 403, "BEM-023"],
      [{ op: "search", namespace_prefix: ["organization"], filter: { v: { $regex: "." } } }, 400, "BEM-146"],
      [{ op: "put", namespace: ["organization", "acme"], key: "", value: { v: 1 } }, 400, "BEM-120"],
      [{ op: "search", namespace_prefix: ["organization", "a.b"] }, 400, "BEM-120"],
    ];
    for (const [bad, status, code] of refusals) {
      const res = await batch([put("first"), bad, put("last")]);
      expect(res.status, JSON.stringify(bad)).toBe(status);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
      expect(await storeFor(t.adminKey).search([]), JSON.stringify(bad)).toEqual([]);
    }
    // Through EdgeweaveStore.batch, mixed ops: the same.
    await expect(
      storeFor(key).batch([
        { namespace: ["organization", "acme"], key: "a", value: { v: 1 } },
        { namespacePrefix: ["organization"], filter: { v: { $regex: "." } } as never, limit: 10, offset: 0 },
      ]),
    ).rejects.toMatchObject({ status: 400, code: "BEM-146" });
    expect(await storeFor(t.adminKey).get(["organization", "acme"], "a")).toBeNull();
    // A batch that holds reads its own puts in order, as before.
    const ok = (await (await batch([put("a"), { op: "get", namespace: ["organization", "acme"], key: "a" }])).json()) as { results: unknown[] };
    expect(ok.results).toMatchObject([null, { key: "a", value: { v: 1 } }]);
  });

  it("tenants never see each other's items", async () => {
    const a = await createTenant();
    const b = await createTenant();
    await storeFor(a.adminKey).put(["organization", "shared"], "k", { owner: "a" });
    const other = storeFor(b.adminKey);
    expect(await other.get(["organization", "shared"], "k")).toBeNull();
    expect(await other.search([])).toEqual([]);
    expect(await other.listNamespaces()).toEqual([]);
  });

  it("bad namespaces are coded 400s", async () => {
    const t = await createTenant();
    const put = async (namespace: unknown) => {
      const res = await api("/v1/langgraph/store/items", { method: "PUT", key: t.adminKey, body: { namespace, key: "k", value: { x: 1 } } });
      return [res.status, ((await res.json()) as { error: { code: string } }).error.code];
    };
    expect(await put(["a.b"])).toEqual([400, "BEM-120"]);
    expect(await put(["Organization", "x"])).toEqual([400, "BEM-060"]);
    expect(await put([])).toEqual([400, "BEM-011"]);
  });

  it("@langchain/langgraph-sdk's StoreClient works unchanged against /v1/langgraph", async () => {
    const t = await createTenant();
    const client = sdkClient(t.adminKey);
    await client.store.putItem(["organization", "acme"], "style", { text: "short", n: 2 });
    await client.store.putItem(["organization", "acme", "notes"], "n1", { text: "note", n: 5 });
    const item = await client.store.getItem(["organization", "acme"], "style");
    expect(item).toMatchObject({ namespace: ["organization", "acme"], key: "style", value: { text: "short", n: 2 } });
    expect(typeof item?.createdAt).toBe("string");
    expect(await client.store.getItem(["organization", "acme"], "missing")).toBeNull();
    const found = await client.store.searchItems(["organization", "acme"], { filter: { n: { $gt: 3 } } });
    expect(found.items.map((i) => i.key)).toEqual(["n1"]);
    expect((await client.store.listNamespaces({ prefix: ["organization"] })).namespaces).toEqual([
      ["organization", "acme"],
      ["organization", "acme", "notes"],
    ]);
    await client.store.deleteItem(["organization", "acme"], "style");
    expect(await client.store.getItem(["organization", "acme"], "style")).toBeNull();
    // The same items through EdgeweaveStore: one backend.
    expect((await storeFor(t.adminKey).get(["organization", "acme", "notes"], "n1"))?.value).toEqual({ text: "note", n: 5 });
  });
});
