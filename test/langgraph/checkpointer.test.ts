import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { threadObjectName } from "../../src/thread/thread-id";
import type { ThreadDO } from "../../src/object/thread-object";
import { app } from "../../src/http/app";
import { api, authHeaders, createKey, createTenant, OPERATOR_KEY } from "../support/tenants";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";
import { BASE_URL, saverFor, workerFetch } from "./support";

const meta = { source: "input" as const, step: -1, parents: {} };
const stubOf = (tenant: string, threadId: string) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, threadId)));

async function putOne(saver: ReturnType<typeof saverFor>, threadId: string, values: Record<string, unknown> = {}) {
  const cp = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, 1])) };
  return saver.put({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, cp, meta, cp.channel_versions);
}

describe("EdgeweaveSaver over the Worker", () => {
  it("a one-node graph invoke costs at most three HTTP calls, fast node or slow", async () => {
    const t = await createTenant();
    const counter = { calls: 0, paths: [] as string[] };
    const State = Annotation.Root({ n: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });
    const build = (node: () => Promise<{ n: number }> | { n: number }) =>
      new StateGraph(State)
        .addNode("inc", node)
        .addEdge(START, "inc")
        .addEdge("inc", END)
        .compile({ checkpointer: saverFor(t.adminKey, counter) });
    const fast = build(() => ({ n: 1 }));
    const slow = build(async () => (await new Promise((r) => setTimeout(r, 30)), { n: 1 }));
    const calls: number[] = [];
    let n = 0;
    for (const graph of [fast, fast, slow, slow]) {
      counter.calls = 0;
      const out = await graph.invoke({ n: 1 }, { configurable: { thread_id: "one-node" } });
      n += 2;
      expect(out.n).toBe(n);
      calls.push(counter.calls);
    }
    expect(Math.max(...calls)).toBeLessThanOrEqual(3);
    expect(counter.paths[0]).toBe("POST /v1/langgraph/threads/one-node/get");
    // Stored before invoke returned: a fresh saver (nothing queued) reads the final state.
    const state = await build(() => ({ n: 1 })).getState({ configurable: { thread_id: "one-node" } });
    expect(state.values.n).toBe(8);
  });

  it("a finished task's writes are stored while a parallel task of its step still runs (not held until the step ends)", async () => {
    const t = await createTenant();
    const State = Annotation.Root({ a: Annotation<string>(), b: Annotation<string>() });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const graph = new StateGraph(State)
      .addNode("fast", async () => (await new Promise((r) => setTimeout(r, 50)), { a: "done" })) // after the step's checkpoint is stored
      .addNode("slow", async () => (await gate, { b: "done" }))
      .addEdge(START, "fast")
      .addEdge(START, "slow")
      .addEdge("fast", END)
      .addEdge("slow", END)
      .compile({ checkpointer: saverFor(t.adminKey) });
    const run = graph.invoke({}, { configurable: { thread_id: "parallel" } });
    // Another process (a fresh saver) must see fast's write: were this one to crash now, fast would not rerun.
    const reader = saverFor(t.adminKey);
    let seen: string[] = [];
    for (let i = 0; i < 40 && !seen.includes("a"); i++) {
      await new Promise((r) => setTimeout(r, 25));
      seen = ((await reader.getTuple({ configurable: { thread_id: "parallel" } }))?.pendingWrites ?? []).map((w) => w[1]);
    }
    release();
    expect(await run).toEqual({ a: "done", b: "done" });
    expect(seen).toContain("a");
  });

  it("a finished task's writes that fail to store while its step runs on fail the run (not a checkpoint without them)", async () => {
    const t = await createTenant();
    const State = Annotation.Root({ a: Annotation<string>(), b: Annotation<string>() });
    let refused = 0;
    const inner = workerFetch();
    // The batch holding only fast's write is answered 503; every other request goes through.
    const flaky: typeof fetch = async (input, init) => {
      const ops = init?.body ? ((JSON.parse(String(init.body)) as { ops?: { op: string; writes?: { channel: string }[] }[] }).ops ?? []) : [];
      if (ops.length > 0 && ops.every((o) => o.op === "writes" && o.writes?.every((w) => w.channel === "a"))) {
        refused++;
        return Response.json({ error: { code: "BEM-000", message: "unavailable" } }, { status: 503 });
      }
      return inner(input, init);
    };
    const graph = new StateGraph(State)
      .addNode("fast", async () => (await new Promise((r) => setTimeout(r, 50)), { a: "done" }))
      .addNode("slow", async () => (await new Promise((r) => setTimeout(r, 300)), { b: "done" }))
      .addEdge(START, "fast")
      .addEdge(START, "slow")
      .addEdge("fast", END)
      .addEdge("slow", END)
      .compile({ checkpointer: new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: flaky }) });
    await expect(graph.invoke({}, { configurable: { thread_id: "lost-writes" } })).rejects.toMatchObject({ status: 503 });
    expect(refused).toBe(1);
  });

  it("a write the server refuses fails the graph run (nothing is acknowledged before it is stored)", async () => {
    const t = await createTenant();
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:allowed"] });
    const State = Annotation.Root({ n: Annotation<number>() });
    const graph = new StateGraph(State)
      .addNode("set", () => ({ n: 1 }))
      .addEdge(START, "set")
      .addEdge("set", END)
      .compile({ checkpointer: saverFor(member.key) });
    await expect(graph.invoke({ n: 0 }, { configurable: { thread_id: "other" } })).rejects.toMatchObject({ code: "BEM-025" });
    expect((await graph.invoke({ n: 0 }, { configurable: { thread_id: "allowed" } })).n).toBe(1);
  });

  it("a 5 MB channel value round-trips through chunked rows (threshold lowered to 64 KiB for tests)", async () => {
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const big = "x".repeat(5 * 1024 * 1024 - 7) + "-end-ok";
    const config = await putOne(saver, "big", { doc: big });
    await saver.putWrites(config, [["doc", big]], "task-1");
    const tuple = await saver.getTuple(config);
    expect((tuple?.checkpoint.channel_values.doc as string | undefined)?.length).toBe(big.length);
    expect(tuple?.checkpoint.channel_values.doc === big).toBe(true);
    expect(tuple?.pendingWrites?.[0]?.[2] === big).toBe(true);
    const rows = await runInDurableObject(stubOf(t.tenant, "big"), (d: ThreadDO) => {
      const sql = (d as unknown as { ctx: DurableObjectState }).ctx.storage.sql;
      const max = sql.exec<{ n: number }>(`SELECT MAX(LENGTH(data)) AS n FROM lg_chunks`).one().n;
      const count = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM lg_chunks`).one().n;
      return { max, count };
    });
    expect(rows.max).toBeLessThanOrEqual(65536);
    expect(rows.count).toBeGreaterThanOrEqual(2 * 80);
  });

  it("a member reaches thread t only when its grants match session:t; lists skip the rest", async () => {
    const t = await createTenant();
    const admin = saverFor(t.adminKey);
    await putOne(admin, "mine");
    await putOne(admin, "theirs");
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:mine"] });
    const saver = saverFor(member.key);
    expect((await saver.getTuple({ configurable: { thread_id: "mine" } }))?.config.configurable?.thread_id).toBe("mine");
    // A thread outside the grants is refused as on every other thread route (src/auth/policy.ts: reach_thread, BEM-025).
    await expect(saver.getTuple({ configurable: { thread_id: "theirs" } })).rejects.toMatchObject({ status: 403, code: "BEM-025" });
    await expect(putOne(saver, "theirs")).rejects.toMatchObject({ code: "BEM-025" });
    await expect(saver.deleteThread("theirs")).rejects.toMatchObject({ code: "BEM-022" });
    const all = [];
    for await (const tuple of saver.list({ configurable: {} })) all.push(tuple.config.configurable?.thread_id);
    expect(all).toEqual(["mine"]);
    const adminAll = [];
    for await (const tuple of admin.list({ configurable: {} })) adminAll.push(tuple.config.configurable?.thread_id);
    expect(adminAll.sort()).toEqual(["mine", "theirs"]);
  });

  it("a cross-thread list reads only the index rows the key reaches: a member's grants are in the query, not applied to every thread of the tenant", async () => {
    const t = await createTenant();
    await putOne(saverFor(t.adminKey), "lg-mine");
    // 150 other LangGraph threads in the tenant's index (three pages of the scan).
    const others = Array.from({ length: 150 }, (_, i) => `other-${String(i).padStart(3, "0")}`);
    await env.DB.batch(
      others.map((id) => env.DB.prepare("INSERT INTO langgraph_threads (tenant_id, thread_id, created_at) VALUES (?, ?, 0)").bind(t.tenant, id)),
    );
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:lg-*"] });
    const reads: string[] = [];
    const db = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare") return (sql: string) => (sql.includes("FROM langgraph_threads") && reads.push(sql), target.prepare(sql));
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request("http://x/v1/langgraph/list", { method: "POST", headers: authHeaders(member.key), body: "{}" }),
      { ...env, DB: db },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { tuples: { thread_id: string }[] }).tuples.map((x) => x.thread_id)).toEqual(["lg-mine"]);
    expect(reads.length).toBe(1);
  });

  it("tenants never see each other's checkpoints, even under the same thread id", async () => {
    const a = await createTenant();
    const b = await createTenant();
    await putOne(saverFor(a.adminKey), "shared-id", { secret: "a's" });
    expect(await saverFor(b.adminKey).getTuple({ configurable: { thread_id: "shared-id" } })).toBeUndefined();
    const listed = [];
    for await (const tuple of saverFor(b.adminKey).list({ configurable: {} })) listed.push(tuple);
    expect(listed).toEqual([]);
  });

  it("deleteThread removes LangGraph rows only: the thread's own edgeweave turns stay", async () => {
    const t = await createTenant();
    const res = await api("/v1/threads/both/state", { key: t.adminKey, body: { ops: [{ op: "append", messages: [{ role: "user", content: "kept" }] }] } });
    expect(res.status).toBe(200);
    const saver = saverFor(t.adminKey);
    await putOne(saver, "both");
    await saver.deleteThread("both");
    await saver.deleteThread("both"); // nothing left: still fine for the saver, 404 over HTTP
    expect((await api("/v1/langgraph/threads/both", { method: "DELETE", key: t.adminKey })).status).toBe(404);
    expect(await saver.getTuple({ configurable: { thread_id: "both" } })).toBeUndefined();
    const state = (await (await api("/v1/threads/both/state", { key: t.adminKey })).json()) as { channels: { messages: { content: string }[] } };
    expect(state.channels.messages.map((m) => m.content)).toEqual(["kept"]);
  });

  it("DELETE /v1/threads/:id of an id used both ways takes its LangGraph checkpoints too, and their index row and count with them", async () => {
    const t = await createTenant();
    const threads = async () =>
      (await env.DB.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = 'threads'").bind(t.tenant).first<{ n: number }>())?.n ?? 0;
    const res = await api("/v1/threads/both2/state", { key: t.adminKey, body: { ops: [{ op: "append", messages: [{ role: "user", content: "x" }] }] } });
    expect(res.status).toBe(200);
    const saver = saverFor(t.adminKey);
    await putOne(saver, "both2");
    expect(await threads()).toBe(2); // the README's rule: an id used both ways counts twice
    expect((await api("/v1/threads/both2", { method: "DELETE", key: t.adminKey })).status).toBe(204);
    expect(await saver.getTuple({ configurable: { thread_id: "both2" } })).toBeUndefined();
    // Nothing left that names it: the LangGraph list does not offer an empty thread, and the quota has room again.
    const listed: unknown[] = [];
    for await (const tuple of saver.list({ configurable: {} })) listed.push(tuple);
    expect(listed).toEqual([]);
    expect((await env.DB.prepare("SELECT 1 FROM langgraph_threads WHERE tenant_id = ? AND thread_id = 'both2'").bind(t.tenant).first()) ?? null).toBeNull();
    expect(await threads()).toBe(0);
  });

  it("bad input is a coded 4xx", async () => {
    const t = await createTenant();
    const post = (path: string, body: unknown, key = t.adminKey) => api(`/v1/langgraph${path}`, { key, body });
    const codeOf = async (r: Promise<Response>) => {
      const res = await r;
      return [res.status, ((await res.json()) as { error: { code: string } }).error.code];
    };
    expect(await codeOf(post("/threads/bad id!/get", {}))).toEqual([400, "BEM-030"]);
    expect(await codeOf(post("/threads/ok/get", {}, OPERATOR_KEY))).toEqual([403, "BEM-022"]);
    expect(await codeOf(post("/threads/ok/batch", { ops: [] }))).toEqual([400, "BEM-011"]);
    const badValue = {
      op: "writes",
      ns: "",
      checkpoint_id: "c",
      task_id: "t",
      task_path: "",
      writes: [{ channel: "a", idx: 0, value: { t: "json", b: "not base64!" } }],
    };
    expect(await codeOf(post("/threads/ok/batch", { ops: [badValue] }))).toEqual([400, "BEM-011"]);
  });
});
