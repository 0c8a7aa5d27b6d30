import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { countOf } from "../../src/auth/quotas";
import { authHeaders, createKey, createTenant, OPERATOR_KEY, type TestTenant } from "../support/tenants";

/**
 * Issue 11, finding 12: admins could mint unlimited keys and webhooks, and nothing capped a
 * tenant's threads or facts. Each quota is a wrangler var (lowered here by calling the app with
 * a copy of the test env); past it the create is 413 with the kind's code and writes nothing.
 */
async function call(vars: Record<string, string>, path: string, key: string, body?: unknown, method?: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`http://x${path}`, {
      method: method ?? (body === undefined ? "GET" : "POST"),
      headers: authHeaders(key),
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    { ...env, ...vars },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

async function expectCode(res: Response, status: number, code: string): Promise<void> {
  expect(res.status, await res.clone().text()).toBe(status);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
}

const rows = async (sql: string, ...binds: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...binds)
      .first<{ n: number }>()
  )?.n ?? 0;

describe("per-tenant quotas", () => {
  it("keys: MAX_KEYS_PER_TENANT live keys, then 413 BEM-015 (operator and tenant admin alike); revoking makes room", async () => {
    const t = await createTenant(); // one admin and one member key
    const vars = { MAX_KEYS_PER_TENANT: "3" };
    const third = await call(vars, `/v1/admin/tenants/${t.tenant}/keys`, t.adminKey, { role: "member", scopes: [] });
    expect(third.status).toBe(201);
    await expectCode(await call(vars, `/v1/admin/tenants/${t.tenant}/keys`, t.adminKey, { role: "member", scopes: [] }), 413, "BEM-015");
    await expectCode(await call(vars, `/v1/admin/tenants/${t.tenant}/keys`, OPERATOR_KEY, { role: "admin" }), 413, "BEM-015");
    expect(await rows("SELECT COUNT(*) AS n FROM api_keys WHERE tenant_id = ?", t.tenant)).toBe(3);
    const { id } = (await third.json()) as { id: string };
    expect((await call(vars, `/v1/admin/tenants/${t.tenant}/keys/${id}`, t.adminKey, undefined, "DELETE")).status).toBe(200);
    expect(await countOf(env.DB, t.tenant, "keys")).toBe(2);
    expect((await call(vars, `/v1/admin/tenants/${t.tenant}/keys`, t.adminKey, { role: "member", scopes: [] })).status).toBe(201);
  });

  it("webhooks: MAX_WEBHOOKS_PER_TENANT, then 413 BEM-016; deleting makes room", async () => {
    const t = await createTenant();
    const vars = { MAX_WEBHOOKS_PER_TENANT: "2" };
    const hook = {
      name: "h",
      agent_name: "assistant",
      thread_from: "/id",
      text_from: "/text",
      scopes: ["session:*", "organization:acme"],
      rewrite_history: true,
    };
    const first = (await (await call(vars, "/v1/webhooks", t.adminKey, hook)).json()) as { id: string };
    expect((await call(vars, "/v1/webhooks", t.adminKey, hook)).status).toBe(201);
    await expectCode(await call(vars, "/v1/webhooks", t.adminKey, hook), 413, "BEM-016");
    expect(await rows("SELECT COUNT(*) AS n FROM webhooks WHERE tenant_id = ?", t.tenant)).toBe(2);
    expect((await call(vars, `/v1/webhooks/${first.id}`, t.adminKey, undefined, "DELETE")).status).toBe(200);
    expect((await call(vars, "/v1/webhooks", t.adminKey, hook)).status).toBe(201);
  });

  it("facts: MAX_FACTS_PER_TENANT, then 413 BEM-018 on the route and on the task queue route; forgetting makes room", async () => {
    const t = await createTenant();
    const vars = { MAX_FACTS_PER_TENANT: "2" };
    const fact = (text: string) => ({ scope: `organization:${t.tenant}`, kind: "note", text });
    const a = (await (await call(vars, "/v1/memory/facts", t.adminKey, fact("a"))).json()) as { id: string };
    expect((await call(vars, "/v1/memory/facts", t.adminKey, { ...fact("b"), key: "k-b" })).status).toBe(201);
    await expectCode(await call(vars, "/v1/memory/facts", t.adminKey, fact("c")), 413, "BEM-018");
    await expectCode(await call(vars, "/v1/memory/tasks", t.adminKey, { op: "remember", ...fact("d") }), 413, "BEM-018");
    // A key the scope holds replaces its fact (no new row), so a full tenant may still replace it, queued or not.
    expect((await call(vars, "/v1/memory/facts", t.adminKey, { ...fact("b2"), key: "k-b" })).status).toBe(201);
    expect((await call(vars, "/v1/memory/tasks", t.adminKey, { op: "remember", ...fact("b3"), key: "k-b" })).status).toBe(202);
    await expectCode(await call(vars, "/v1/memory/tasks", t.adminKey, { op: "remember", ...fact("b4"), key: "k-new" }), 413, "BEM-018");
    expect(await rows("SELECT COUNT(*) AS n FROM facts WHERE tenant_id = ?", t.tenant)).toBe(2);
    expect((await call(vars, `/v1/memory/facts/${a.id}`, t.adminKey, undefined, "DELETE")).status).toBe(200);
    expect((await call(vars, "/v1/memory/facts", t.adminKey, fact("c"))).status).toBe(201);
  });

  it("threads: a run or repair that would create one more than MAX_THREADS_PER_TENANT is 413 BEM-017; existing threads keep working", async () => {
    const t = await createTenant();
    const vars = { MAX_THREADS_PER_TENANT: "2" };
    const chat = (thread_id: string) => ({ model: "offline-echo", thread_id, messages: [{ role: "user", content: "hi" }] });
    expect((await call(vars, "/v1/chat/completions", t.adminKey, chat("one"))).status).toBe(200);
    expect((await call(vars, "/v1/chat/completions", t.adminKey, chat("two"))).status).toBe(200);
    await expectCode(await call(vars, "/v1/chat/completions", t.adminKey, chat("three")), 413, "BEM-017");
    await expectCode(
      await call(vars, "/v1/invoke", t.adminKey, { agent_name: "assistant", session_id: "four", content: [{ type: "text", text: "hi" }] }),
      413,
      "BEM-017",
    );
    await expectCode(await call(vars, "/v1/threads/five/state", t.adminKey, { ops: [{ op: "set", channel: "x", value: 1 }] }), 413, "BEM-017");
    // A conversation created with items makes a thread too; a one-off response's thread counts on its own quota (below).
    await expectCode(await call(vars, "/v1/conversations", t.adminKey, { items: [{ role: "user", content: "hi" }] }), 413, "BEM-017");
    expect(await rows("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?", t.tenant)).toBe(0);
    expect(await rows("SELECT COUNT(*) AS n FROM responses WHERE tenant_id = ?", t.tenant)).toBe(0);
    // Nothing was created: no thread object, no listing row.
    expect((await call(vars, "/v1/threads/three/state", t.adminKey)).status).toBe(404);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(2);
    // The threads it has still take turns; deleting one makes room.
    expect((await call(vars, "/v1/chat/completions", t.adminKey, chat("one"))).status).toBe(200);
    expect((await call(vars, "/v1/threads/two", t.adminKey, undefined, "DELETE")).status).toBe(204);
    expect((await call(vars, "/v1/chat/completions", t.adminKey, chat("three"))).status).toBe(200);
  });

  it("a one-off response's thread counts against MAX_RESPONSE_THREADS_PER_TENANT, not MAX_THREADS_PER_TENANT (413 BEM-017 past it)", async () => {
    const t = await createTenant();
    const vars = { MAX_THREADS_PER_TENANT: "1", MAX_RESPONSE_THREADS_PER_TENANT: "2" };
    const respond = () => call(vars, "/v1/responses", t.adminKey, { model: "offline-echo", input: "hi" });
    const chat = { model: "offline-echo", thread_id: "one", messages: [{ role: "user", content: "hi" }] };
    expect((await call(vars, "/v1/chat/completions", t.adminKey, chat)).status).toBe(200);
    expect((await respond()).status).toBe(200);
    expect((await respond()).status).toBe(200);
    await expectCode(await respond(), 413, "BEM-017");
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(1);
    expect(await countOf(env.DB, t.tenant, "response_threads")).toBe(2);
  });

  it("conversations are threads: an empty one counts against MAX_THREADS_PER_TENANT (413 BEM-017 past it); deleting one makes room", async () => {
    // Issue 25, finding 9: 30 of 30 empty conversations were created at a quota of 5.
    const t = await createTenant();
    const vars = { MAX_THREADS_PER_TENANT: "5" };
    const full = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v".repeat(512)]));
    const made: string[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await call(vars, "/v1/conversations", t.adminKey, { metadata: full });
      statuses.push(res.status);
      if (res.status === 200) made.push(((await res.json()) as { id: string }).id);
      else await expectCode(res, 413, "BEM-017");
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(5);
    expect(await rows("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?", t.tenant)).toBe(5);
    // Each is listed as the thread it is, and still takes its first items at the cap.
    const listed = (await (await call(vars, "/v1/threads?limit=100", t.adminKey)).json()) as { threads: { thread_id: string }[] };
    expect(listed.threads.map((x) => x.thread_id).sort()).toEqual([...made].sort());
    expect((await call(vars, `/v1/conversations/${made[0]}/items`, t.adminKey, { items: [{ role: "user", content: "hi" }] })).status).toBe(200);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(5);
    // Metadata stays bounded: 16 keys of at most 64 characters, values of at most 512.
    await expectCode(await call(vars, "/v1/conversations", t.adminKey, { metadata: { ...full, k16: "v" } }), 400, "BEM-011");
    await expectCode(await call(vars, "/v1/conversations", t.adminKey, { metadata: { k: "v".repeat(513) } }), 400, "BEM-011");
    // Deleting an empty one makes room.
    expect((await call(vars, `/v1/conversations/${made[1]}`, t.adminKey, undefined, "DELETE")).status).toBe(200);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(4);
    expect((await call(vars, "/v1/conversations", t.adminKey, {})).status).toBe(200);
  });

  it("LangGraph threads count against MAX_THREADS_PER_TENANT: a new one past it is 413 BEM-017 and keeps nothing", async () => {
    const t = await createTenant();
    const vars = { MAX_THREADS_PER_TENANT: "2" };
    const b64 = (v: unknown) => btoa(JSON.stringify(v));
    const put = (id: string) => ({
      ops: [
        {
          op: "put",
          ns: "",
          id,
          parent_id: null,
          v: 4,
          versions: {},
          checkpoint: { t: "json", b: b64({ v: 4, id, ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} }) },
          metadata: { t: "json", b: b64({}) },
          blobs: [],
        },
      ],
    });
    const batch = (thread: string, id: string) => call(vars, `/v1/langgraph/threads/${thread}/batch`, t.adminKey, put(id));
    expect(
      (await call(vars, "/v1/chat/completions", t.adminKey, { model: "offline-echo", thread_id: "chat-1", messages: [{ role: "user", content: "hi" }] }))
        .status,
    ).toBe(200);
    expect((await batch("lg-1", "1ef00000-0000-6000-8000-000000000001")).status).toBe(200);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(2);
    await expectCode(await batch("lg-2", "1ef00000-0000-6000-8000-000000000002"), 413, "BEM-017");
    // Nothing of lg-2 was kept: no checkpoint, no index row, the count unchanged.
    const tuple = await call(vars, "/v1/langgraph/threads/lg-2/get", t.adminKey, { ns: "" });
    expect(((await tuple.json()) as { tuple: unknown }).tuple).toBeNull();
    expect(await rows("SELECT COUNT(*) AS n FROM langgraph_threads WHERE tenant_id = ?", t.tenant)).toBe(1);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(2);
    // The thread it has keeps taking checkpoints; deleting it makes room.
    expect((await batch("lg-1", "1ef00000-0000-6000-8000-000000000003")).status).toBe(200);
    expect((await call(vars, "/v1/langgraph/threads/lg-1", t.adminKey, undefined, "DELETE")).status).toBe(204);
    expect(await countOf(env.DB, t.tenant, "threads")).toBe(1);
    expect((await batch("lg-2", "1ef00000-0000-6000-8000-000000000004")).status).toBe(200);
  });

  it("LangGraph store items: a new key past MAX_STORE_ITEMS_PER_TENANT is 413 BEM-121; existing keys still update", async () => {
    const t = await createTenant();
    const vars = { MAX_STORE_ITEMS_PER_TENANT: "2" };
    const put = (key: string, value: unknown) => call(vars, "/v1/langgraph/store/items", t.adminKey, { namespace: ["notes"], key, value }, "PUT");
    expect((await put("a", { v: 1 })).status).toBe(204);
    expect((await put("b", { v: 1 })).status).toBe(204);
    await expectCode(await put("c", { v: 1 }), 413, "BEM-121");
    expect(await rows("SELECT COUNT(*) AS n FROM store_items WHERE tenant_id = ?", t.tenant)).toBe(2);
    expect((await put("a", { v: 2 })).status).toBe(204); // an update needs no room
    // A batch past the limit stores none of its puts (the update before the refused put included);
    // deleting one (a null value) makes room.
    await expectCode(
      await call(vars, "/v1/langgraph/store/batch", t.adminKey, {
        ops: [
          { op: "put", namespace: ["notes"], key: "a", value: { v: 3 } },
          { op: "put", namespace: ["notes"], key: "d", value: { v: 1 } },
        ],
      }),
      413,
      "BEM-121",
    );
    expect(await rows("SELECT COUNT(*) AS n FROM store_items WHERE tenant_id = ? AND value = '{\"v\":2}'", t.tenant)).toBe(1);
    expect((await put("b", null)).status).toBe(204);
    expect((await put("c", { v: 1 })).status).toBe(204);
    expect(await countOf(env.DB, t.tenant, "store_items")).toBe(2);
  });

  it("LangGraph store bytes: a member's puts past MAX_STORE_BYTES_PER_TENANT are 413 BEM-190, whatever the batch (100,000 items of 1 MiB each filled the shared D1)", async () => {
    const t = await createTenant();
    const { key } = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] });
    const vars = { MAX_STORE_BYTES_PER_TENANT: "100000" };
    const big = (n: number) => ({ s: "x".repeat(n) });
    // Unindexed (index: false), so an item's bytes are its namespace, key and value; an index counts too (below).
    const put = (k: string, value: unknown) =>
      call(vars, "/v1/langgraph/store/items", key, { namespace: ["organization", "acme"], key: k, value, index: false }, "PUT");
    const bytes = async () =>
      (await env.DB.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = 'store_bytes'").bind(t.tenant).first<{ n: number }>())?.n;
    expect((await put("a", big(40_000))).status).toBe(204);
    expect((await put("b", big(40_000))).status).toBe(204);
    const item = (n: number) => "organization.acme".length + 1 + JSON.stringify(big(n)).length; // namespace, key and value
    expect(await bytes()).toBe(2 * item(40_000));
    await expectCode(await put("c", big(40_000)), 413, "BEM-190");
    // Nor through a batch of small puts, nor by growing an item it has.
    const ops = Array.from({ length: 30 }, (_, i) => ({ op: "put", namespace: ["organization", "acme"], key: `s${i}`, value: big(1000) }));
    await expectCode(await call(vars, "/v1/langgraph/store/batch", key, { ops }), 413, "BEM-190");
    await expectCode(await put("a", big(60_000)), 413, "BEM-190");
    expect(await rows("SELECT COUNT(*) AS n FROM store_items WHERE tenant_id = ?", t.tenant)).toBe(2);
    // An update that does not grow, or a delete, always goes in; what it frees makes room.
    expect((await put("a", big(10_000))).status).toBe(204);
    expect((await put("b", null)).status).toBe(204);
    expect(await bytes()).toBe(item(10_000));
    expect((await put("c", big(40_000))).status).toBe(204);
    // Namespaces and keys count too: 100 items of a long namespace and key with empty values are not free.
    const keys = Array.from({ length: 100 }, (_, i) => ({
      op: "put",
      namespace: ["organization", "acme", "x".repeat(256)],
      key: `${i}`.padEnd(512, "k"),
      value: {},
    }));
    await expectCode(await call(vars, "/v1/langgraph/store/batch", key, { ops: keys }), 413, "BEM-190");
    // An item's index (its texts for `query`, and their vectors) counts as well: it grows the item, and dropping it frees the bytes.
    const before = await bytes();
    const indexed = { namespace: ["organization", "acme"], key: "c", value: big(40_000) };
    expect((await call(vars, "/v1/langgraph/store/items", key, indexed, "PUT")).status).toBe(204);
    expect((await bytes())! - before!).toBeGreaterThan(4000);
    expect((await put("c", big(40_000))).status).toBe(204);
    expect(await bytes()).toBe(before);
  });

  it("counts are kept by triggers with every write, per tenant, and quotas default to the documented vars", async () => {
    const a: TestTenant = await createTenant();
    const b = await createTenant();
    expect(await countOf(env.DB, a.tenant, "keys")).toBe(2);
    expect(await countOf(env.DB, b.tenant, "keys")).toBe(2);
    await env.DB.prepare("INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at) VALUES ('f1', ?, 'organization:x', 'note', 't', 1, 0)")
      .bind(a.tenant)
      .run();
    expect(await countOf(env.DB, a.tenant, "facts")).toBe(1);
    expect(await countOf(env.DB, b.tenant, "facts")).toBe(0);
    await env.DB.prepare("DELETE FROM facts WHERE id = 'f1'").run();
    expect(await countOf(env.DB, a.tenant, "facts")).toBe(0);
    expect([env.MAX_KEYS_PER_TENANT, env.MAX_WEBHOOKS_PER_TENANT, env.MAX_THREADS_PER_TENANT, env.MAX_FACTS_PER_TENANT].map(Number)).toEqual([
      1000, 500, 100_000, 100_000,
    ]);
  });
});
