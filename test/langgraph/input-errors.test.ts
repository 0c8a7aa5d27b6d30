import { describe, expect, it } from "vitest";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { MAX_CHANNEL_NAME, MAX_CHANNEL_VERSION } from "../../src/thread/langgraph-checkpoint-types";
import { checkpointPut } from "../support/checkpoint-put";
import { api, createKey, createTenant } from "../support/tenants";
import { BASE_URL, workerFetch } from "./support";

/** Issue #25.11: LangGraph input that answered 500 BEM-001 is a coded 4xx, or works. */
const b64 = (o: unknown) => btoa(JSON.stringify(o));
const storeFor = (key: string) => new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch() });
const codeOf = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;

describe("LangGraph input that used to answer 500", () => {
  it("the checkpointer's reads take small bodies: over 64 KiB is 413 BEM-013, a list filter of more than 64 keys 400 BEM-011", async () => {
    // They had taken the batch's 16 MiB and 100,000 items, each filter key checked against every row the list reads.
    const t = await createTenant();
    const big = { filter: { note: "x".repeat(70 * 1024) } };
    for (const path of ["/v1/langgraph/threads/small/list", "/v1/langgraph/list"]) {
      const res = await api(path, { key: t.adminKey, body: big });
      expect([res.status, await codeOf(res)], path).toEqual([413, "BEM-013"]);
    }
    const get = await api("/v1/langgraph/threads/small/get", { key: t.adminKey, body: { checkpoint_id: "1ef-1", pad: "x".repeat(70 * 1024) } });
    expect([get.status, await codeOf(get)]).toEqual([413, "BEM-013"]);
    const wide = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    const res = await api("/v1/langgraph/threads/small/list", { key: t.adminKey, body: { filter: wide } });
    expect([res.status, await codeOf(res)]).toEqual([400, "BEM-011"]);
    const ok = await api("/v1/langgraph/threads/small/list", { key: t.adminKey, body: { filter: Object.fromEntries(Object.entries(wide).slice(0, 64)) } });
    expect(ok.status).toBe(200);
  });

  it("base64 the schema accepted but atob rejects ('A', 'AAAAA', 'AB='): 400 BEM-011, nothing stored", async () => {
    const t = await createTenant();
    for (const bad of ["A", "AAAAA", "AB=", "AAAAAA="]) {
      const op = {
        op: "put",
        ns: "",
        id: "1ef-1",
        parent_id: null,
        v: 4,
        versions: {},
        checkpoint: { t: "json", b: b64({}) },
        metadata: { t: "json", b: bad },
        blobs: [],
      };
      const res = await api("/v1/langgraph/threads/b64/batch", { key: t.adminKey, body: { ops: [op] } });
      expect(res.status, bad).toBe(400);
      expect(await codeOf(res)).toBe("BEM-011");
    }
    const got = await api("/v1/langgraph/threads/b64/get", { key: t.adminKey, body: {} });
    expect(((await got.json()) as { tuple: unknown }).tuple).toBeNull();
    // What btoa makes, padded or not, still goes in.
    for (const good of ["", "AA==", "AA", "AAA=", "AAA", "AAAA"]) {
      const op = {
        op: "writes",
        ns: "",
        checkpoint_id: "1ef-1",
        task_id: `t-${good.length}`,
        task_path: "",
        writes: [{ channel: "c", idx: 0, value: { t: "bytes", b: good } }],
      };
      expect((await api("/v1/langgraph/threads/b64/batch", { key: t.adminKey, body: { ops: [op] } })).status, good).toBe(200);
    }
  });

  it("store filter fields holding a backslash, a quote or NUL match those fields", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey);
    const ns = ["docset", "odd"];
    const fields = ["a\\b", 'say "hi"', "nul\u0000here", "plain"];
    await store.put(ns, "odd", Object.fromEntries(fields.map((f) => [f, 1])));
    await store.put(ns, "other", { plain: 2 });
    for (const field of fields) {
      const res = await api("/v1/langgraph/store/items/search", { key: t.adminKey, body: { namespace_prefix: ns, filter: { [field]: 1 } } });
      expect(res.status, JSON.stringify(field)).toBe(200);
      expect(((await res.json()) as { items: { key: string }[] }).items.map((i) => i.key)).toEqual(["odd"]);
    }
  });

  it("a filter of 100 fields works (one bound parameter, not two per field; D1's expression depth of 100), by an admin and by a member of 64 grants; past 100 conditions it is 400 BEM-146", async () => {
    const t = await createTenant();
    const store = storeFor(t.adminKey);
    const wide = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, i]));
    await store.put(["organization", "o63", "wide"], "all", wide);
    await store.put(["organization", "o63", "wide"], "most", { ...wide, f99: -1 });
    expect((await store.search(["organization", "o63", "wide"], { filter: wide })).map((i) => i.key)).toEqual(["all"]);
    const member = (await createKey(t.tenant, { role: "member", scopes: Array.from({ length: 64 }, (_, i) => `organization:o${i}`) })).key;
    expect((await storeFor(member).search(["organization"], { filter: wide })).map((i) => i.key)).toEqual(["all"]);
    const tooMany = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, i]));
    const res = await api("/v1/langgraph/store/items/search", { key: t.adminKey, body: { namespace_prefix: [], filter: tooMany } });
    expect(res.status).toBe(400);
    expect(await codeOf(res)).toBe("BEM-146");
  });

  it("a member key with 64 exact grants searches and lists namespaces (D1's 100-parameter limit)", async () => {
    const t = await createTenant();
    const scopes = Array.from({ length: 64 }, (_, i) => `organization:o${i}`);
    const member = (await createKey(t.tenant, { role: "member", scopes })).key;
    const admin = storeFor(t.adminKey);
    for (const i of [0, 31, 63]) await admin.put(["organization", `o${i}`, "notes"], "k", { i });
    await admin.put(["organization", "outside"], "k", { i: -1 });
    const store = storeFor(member);
    expect((await store.search([], { limit: 100 })).map((i) => i.value.i).sort()).toEqual([0, 31, 63]);
    expect((await store.search(["organization"], { filter: { i: { $gte: 31 } } })).map((i) => i.value.i).sort()).toEqual([31, 63]);
    expect((await store.listNamespaces({ limit: 100 })).map((n) => n.join("/")).sort()).toEqual([
      "organization/o0/notes",
      "organization/o31/notes",
      "organization/o63/notes",
    ]);
  });

  it("a field a checkpointer route does not take is 400 BEM-011 naming it: a prune's misspelt ns pruned every namespace", async () => {
    const t = await createTenant();
    const put = (id: string, ns: string) => ({
      op: "put",
      ns,
      id,
      parent_id: null,
      v: 4,
      versions: {},
      checkpoint: { t: "json", b: b64({}) },
      metadata: { t: "json", b: b64({}) },
      blobs: [],
    });
    const ok = await api("/v1/langgraph/threads/strict/batch", { key: t.adminKey, body: { ops: [put("1ef-1", ""), put("1ef-2", ""), put("1ef-1", "sub:1")] } });
    expect(ok.status).toBe(200);
    const sent: [string, unknown, string][] = [
      ["/v1/langgraph/threads/strict/prune", { keep_last: 1, namespace: "sub:1" }, "namespace"],
      ["/v1/langgraph/threads/strict/get", { ns: "", checkpointId: "1ef-1" }, "checkpointId"],
      ["/v1/langgraph/threads/strict/list", { ns: "", limt: 1 }, "limt"],
      ["/v1/langgraph/list", { filter: {}, thread_id: "strict" }, "thread_id"],
      ["/v1/langgraph/threads/strict/delta-history", { channels: [], checkpoint: "1ef-1" }, "checkpoint"],
      ["/v1/langgraph/threads/strict/batch", { ops: [{ ...put("1ef-3", ""), parentId: "1ef-2" }] }, "parentId"],
      ["/v1/langgraph/threads/strict/batch", { ops: [put("1ef-3", "")], replace: true }, "replace"],
    ];
    for (const [path, body, field] of sent) {
      const res = await api(path, { key: t.adminKey, body });
      expect(res.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("BEM-011");
      expect(error.message).toContain(field);
    }
    const list = await api("/v1/langgraph/threads/strict/list", { key: t.adminKey, body: {} });
    expect(((await list.json()) as { tuples: { id: string }[] }).tuples.map((x) => x.id).sort()).toEqual(["1ef-1", "1ef-1", "1ef-2"]);
  });
  it("channel names in blobs, writes and versions past MAX_CHANNEL_NAME, and channel versions past MAX_CHANNEL_VERSION: 400 BEM-011 naming the bound, nothing stored", async () => {
    // Unbounded, a long name beside a value inline up to 1.9 MB passed production SQLite's 2 MB row (a 500 there).
    const t = await createTenant();
    const long = "c".repeat(MAX_CHANNEL_NAME + 1);
    const value = { t: "bytes", b: btoa("x") };
    const put = (channel: string, version: string) => ({
      ...checkpointPut(),
      id: "1ef-0001",
      versions: { [channel]: version },
      blobs: [{ channel, version, value }],
    });
    const write = (channel: string) => ({ op: "writes", ns: "", checkpoint_id: "1ef-0001", task_id: "t", task_path: "", writes: [{ channel, idx: 0, value }] });
    const cases: [unknown, string][] = [
      [put(long, "1"), "MAX_CHANNEL_NAME"],
      [{ ...put("doc", "1"), versions: { doc: "1", [long]: "1" } }, "MAX_CHANNEL_NAME"],
      [write(long), "MAX_CHANNEL_NAME"],
      [put("doc", "v".repeat(MAX_CHANNEL_VERSION + 1)), "MAX_CHANNEL_VERSION"],
      [{ ...put("doc", "1"), versions: { doc: "v".repeat(MAX_CHANNEL_VERSION + 1) } }, "MAX_CHANNEL_VERSION"],
    ];
    for (const [op, bound] of cases) {
      // Beside an op that would go in: the batch is refused whole.
      const res = await api("/v1/langgraph/threads/names/batch", { key: t.adminKey, body: { ops: [put("ok", "1"), op] } });
      const body = (await res.json()) as { error?: { code: string; message: string } };
      expect([res.status, body.error?.code], bound).toEqual([400, "BEM-011"]);
      expect(body.error?.message).toContain(bound);
    }
    const got = await api("/v1/langgraph/threads/names/get", { key: t.adminKey, body: {} });
    expect(((await got.json()) as { tuple: unknown }).tuple).toBeNull();
    // At the bounds they go in and read back.
    const name = "é".repeat(MAX_CHANNEL_NAME);
    const version = "9".repeat(MAX_CHANNEL_VERSION);
    const ok = await api("/v1/langgraph/threads/names/batch", { key: t.adminKey, body: { ops: [put(name, version), write(name)] } });
    expect(ok.status, await ok.clone().text()).toBe(200);
    const back = (await (await api("/v1/langgraph/threads/names/get", { key: t.adminKey, body: {} })).json()) as {
      tuple: { blobs: { channel: string }[]; writes: { channel: string }[] };
    };
    expect([back.tuple.blobs[0]?.channel, back.tuple.writes[0]?.channel]).toEqual([name, name]);
  });
});
