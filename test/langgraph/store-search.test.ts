import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { ScopedStore } from "../../src/langgraph/store";
import { OTHER, planted } from "../support/by-meaning";
import { api, createTenant } from "../support/tenants";
import { BASE_URL, sdkClient, workerFetch } from "./support";

/**
 * The LangGraph store's search by `query` (src/langgraph/store-index.ts): items ranked by their
 * indexed fields, full text and meaning fused, each with its score, through the official clients
 * (EdgeweaveStore as a LangGraph BaseStore, and @langchain/langgraph-sdk's StoreClient).
 */

const storeFor = (key: string, fields?: string[]) =>
  new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch(), ...(fields ? { index: { fields } } : {}) });

const NS = ["organization", "acme", "memories"];

/** A namespace of other talk with the planted texts among it (each item's `text`; `n` a field never indexed). */
async function plant(store: EdgeweaveStore): Promise<void> {
  const ops = OTHER.map((text, i) => ({ namespace: NS, key: `o${i}`, value: { text, n: i } }));
  for (const [i, p] of planted.entries()) ops.splice(i * 3 + 1, 0, { namespace: NS, key: `p${i}`, value: { text: p.turn, n: 100 + i } });
  await store.batch(ops);
}

describe("LangGraph store search by query", () => {
  it("finds items that share no word with the query by meaning: each in the top three of sixteen, three of four scored by it", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey, ["text"]);
    await plant(store);
    const top = await Promise.all(planted.map((p) => store.search(NS, { query: p.question, limit: 3 })));
    for (const [i, found] of top.entries()) expect(found.map((r) => r.key)).toContain(`p${i}`);
    // No word in common, so a score above 0 is the dense channel's: at least three of the four have one.
    const scored = top.filter((found, i) => (found.find((r) => r.key === `p${i}`)?.score ?? 0) > 0);
    expect(scored.length).toBeGreaterThanOrEqual(3);
  });

  it("a namespace holding one item: it scores by meaning when close (no word in common), an unrelated one does not", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey, ["text"]);
    const sick = planted[3]!;
    await store.put(["organization", "acme", "one"], "p3", { text: sick.turn });
    await store.put(["organization", "acme", "other"], "o11", { text: OTHER[11]! });
    const [close] = await store.search(["organization", "acme", "one"], { query: sick.question });
    expect(close?.key).toBe("p3");
    expect(close?.score).toBeGreaterThan(0);
    const [unrelated] = await store.search(["organization", "acme", "other"], { query: sick.question });
    expect(unrelated?.score).toBe(0);
  });

  it("ranks a word match first, every item with a score, best first; without a query, newest first and no score", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey, ["text"]);
    await plant(store);
    const found = await store.search(NS, { query: "the projector flickering", limit: 20 });
    expect(found[0]?.value.text).toMatch(/projector/);
    expect(found).toHaveLength(OTHER.length + planted.length);
    const scores = found.map((r) => r.score);
    expect(scores.every((s) => typeof s === "number")).toBe(true);
    expect([...scores].sort((a, b) => b! - a!)).toEqual(scores);
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    // limit and offset page the ranking.
    expect((await store.search(NS, { query: "the projector flickering", limit: 3, offset: 2 })).map((r) => r.key)).toEqual(found.slice(2, 5).map((r) => r.key));
    const plain = await store.search(NS, { limit: 3 });
    expect(plain.map((r) => r.score)).toEqual([undefined, undefined, undefined]);
    // Filters still apply before the ranking.
    expect((await store.search(NS, { query: "projector", filter: { n: { $gte: 100 } }, limit: 20 })).map((r) => r.key).sort()).toEqual([
      "p0",
      "p1",
      "p2",
      "p3",
    ]);
  });

  it("index semantics: only the named fields count, a put's own index wins, index false leaves an item unscored after the rest", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey, ["title"]);
    const body = "Quantum chromodynamics describes how quarks bind through gluons.";
    await store.put(NS, "by-title", { title: "Gardening in spring", body });
    await store.put(NS, "by-body", { title: "Gardening in spring", body }, ["body"]);
    await store.put(NS, "nested", { title: "x", chapters: [{ text: "Tomatoes need sun" }, { text: "quarks and gluons in detail" }] }, ["chapters[*].text"]);
    await store.put(NS, "hidden", { title: "quarks gluons chromodynamics", body }, false);
    const found = await store.search(NS, { query: "quarks gluons", limit: 10 });
    expect(
      found
        .map((r) => r.key)
        .slice(0, 2)
        .sort(),
    ).toEqual(["by-body", "nested"]);
    expect(found.at(-1)).toMatchObject({ key: "hidden" });
    expect(found.at(-1)?.score).toBeUndefined();
    expect(found.find((r) => r.key === "by-title")?.score).toBeLessThan(found[1]!.score!);
    // Updating an item's index follows it: now its title holds the words.
    await store.put(NS, "by-title", { title: "Quarks and gluons", body: "tomatoes" });
    expect((await store.search(NS, { query: "quarks gluons", limit: 1 }))[0]?.key).toBe("by-title");
  });

  it("bad queries answer without an error: empty, blanks, emoji, 100 KB, unknown words, another script", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey, ["text"]);
    await plant(store);
    const newest = (await store.search(NS, { limit: 5 })).map((r) => r.key);
    // Empty or blank: not ranked, as LangGraph's stores (newest first, no score).
    for (const q of ["", "   "])
      expect((await store.search(NS, { query: q, limit: 5 })).map((r) => [r.key, r.score])).toEqual(newest.map((k) => [k, undefined]));
    // Nothing known: every item, scored 0, newest first.
    for (const q of ["🎉🙂", "?!...", "zzqxv blorptangle", "東京に行きました"]) {
      const found = await store.search(NS, { query: q, limit: 5 });
      expect(found.map((r) => [r.key, r.score])).toEqual(newest.map((k) => [k, 0]));
    }
    // 100 KB: still one ranking, the word it repeats first.
    const long = `${"projector ".repeat(10_000)}`.slice(0, 100_000);
    expect((await store.search(NS, { query: long, limit: 1 }))[0]?.value.text).toMatch(/projector/);
  });

  it("tenants are apart by construction: another tenant's items are never candidates, nor weigh in a score", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const mine = storeFor(a.adminKey, ["text"]);
    await plant(mine);
    const before = await mine.search(NS, { query: "Which relative is visiting?", limit: 20 });
    const theirs = storeFor(b.adminKey, ["text"]);
    await theirs.batch(Array.from({ length: 40 }, (_, i) => ({ namespace: NS, key: `b${i}`, value: { text: `Which relative is visiting? My sister ${i}` } })));
    const after = await mine.search(NS, { query: "Which relative is visiting?", limit: 20 });
    expect(after).toEqual(before);
    expect(after[0]?.score).toBeGreaterThan(0);
    expect((await theirs.search(NS, { query: "Lisbon sister flew", limit: 100 })).every((r) => r.key.startsWith("b"))).toBe(true);
  });

  it("@langchain/langgraph-sdk's StoreClient: putItem's index and searchItems' query, with scores", async () => {
    const t = await createTenant();
    const client = sdkClient(t.adminKey);
    for (const [i, text] of OTHER.entries()) await client.store.putItem(NS, `o${i}`, { text, tag: "Is anyone unwell?" }, { index: ["text"] });
    await client.store.putItem(NS, "p3", { text: planted[3]!.turn, tag: "other" }, { index: ["text"] });
    const found = await client.store.searchItems(NS, { query: planted[3]!.question, limit: 3 });
    expect(found.items.map((i) => i.key)).toContain("p3");
    expect(found.items.every((i) => typeof i.score === "number")).toBe(true);
  });

  it("a bad index is a coded 400, and EdgeweaveStore refuses an embedder of its own rather than ignore it", async () => {
    const t = await createTenant();
    for (const index of [true, "text", [""], [1], Array.from({ length: 17 }, () => "a")]) {
      const res = await api("/v1/langgraph/store/items", { method: "PUT", key: t.adminKey, body: { namespace: NS, key: "k", value: { text: "x" }, index } });
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code], JSON.stringify(index)).toEqual([400, "BEM-011"]);
    }
    expect(await storeFor(t.adminKey).get(NS, "k")).toBeNull();
    expect(() => new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: t.adminKey, index: { dims: 1536, fields: ["text"] } })).toThrow(/index\.dims/);
    expect(() => new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: t.adminKey, index: { embeddings: {} } })).toThrow(/index\.embeddings/);
  });

  it("a ranked search keeps to the key's grants and to live items", async () => {
    const t = await createTenant({ memberScopes: ["organization:acme"] });
    const admin = storeFor(t.adminKey, ["text"]);
    await admin.put(["organization", "acme"], "in", { text: "Grandpa caught pneumonia" });
    await admin.put(["organization", "other"], "out", { text: "Grandpa caught pneumonia" });
    const found = await storeFor(t.memberKey).search(["organization"], { query: "Is anyone unwell? pneumonia", limit: 10 });
    expect(found.map((r) => [r.key, (r.score ?? 0) > 0])).toEqual([["in", true]]);
    // An item past its TTL is never a candidate (expires_at in the past, as the purge has not run yet).
    const store = new ScopedStore(env.DB, { kind: "tenant", tenant: t.tenant, role: "admin", keyId: "k-ttl", grants: ["*"] });
    await store.put(["organization", "acme"], "gone", { text: "pneumonia at the hospital" }, { ttl: 1 }, Date.now() - 120_000);
    expect((await store.search(["organization", "acme"], { query: "pneumonia", limit: 10 })).map((r) => r.key)).toEqual(["in"]);
  });

  it("a ranked search reads at most its share of values: a batch of many is 413 BEM-133 and stores nothing; one returns them whole", async () => {
    const t = await createTenant();
    const ns = ["docset", "big"];
    for (let i = 0; i < 3; i++) {
      const res = await api("/v1/langgraph/store/batch", {
        key: t.adminKey,
        body: {
          ops: [
            {
              op: "put",
              namespace: ns,
              key: `k${i}`,
              value: { title: `report ${["apples", "pears", "plums"][i]}`, text: "x".repeat(870_000) },
              index: ["title"],
            },
          ],
        },
      });
      expect(res.status).toBe(200);
    }
    const search = { op: "search", namespace_prefix: ns, limit: 10, query: "apples report" };
    const ops = [{ op: "put", namespace: ns, key: "planted", value: { small: true } }, ...Array.from({ length: 20 }, () => search)];
    const res = await api("/v1/langgraph/store/batch", { key: t.adminKey, body: { ops } });
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([413, "BEM-133"]);
    expect(await storeFor(t.adminKey).get(ns, "planted")).toBeNull();
    // The oldest first: ranked by its title, not by time.
    const one = await storeFor(t.adminKey).search(ns, { query: "apples report", limit: 10 });
    expect(one[0]?.key).toBe("k0");
    expect(one.map((r) => r.value.text.length)).toEqual([870_000, 870_000, 870_000]);
  });
});
