import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ThreadClient } from "../../src/thread/client";
import { call, tenantKey, unique, user } from "./support";

const appendBody = (...contents: string[]) => ({ ops: [{ op: "append", messages: contents.map((c) => user(c)) }] });

describe("thread routes", () => {
  it("admin: write, read state, read history, fork, delete", async () => {
    const { key } = await tenantKey("admin");
    const id = unique("th");
    const c1 = await call(key, "POST", `/v1/threads/${id}/state`, appendBody("q1", "a1"));
    expect(c1.status).toBe(200);
    expect(c1.body).toMatchObject({ step: 1, source: "update", parent_id: null });
    const c2 = await call(key, "POST", `/v1/threads/${id}/state`, { ops: [{ op: "set", channel: "topic", value: "billing" }] });
    expect(c2.body.parent_id).toBe(c1.body.id);

    const state = await call(key, "GET", `/v1/threads/${id}/state`);
    expect(state.status).toBe(200);
    expect(state.body).toMatchObject({ thread_id: id, checkpoint_id: c2.body.id, step: 2, channels: { topic: "billing" } });
    expect(state.body.channels.messages.map((m: { content: string }) => m.content)).toEqual(["q1", "a1"]);

    const old = await call(key, "GET", `/v1/threads/${id}/state?checkpoint_id=${c1.body.id}`);
    expect(old.body.channels).toEqual({ messages: state.body.channels.messages });

    const page1 = await call(key, "GET", `/v1/threads/${id}/history?limit=1`);
    expect(page1.body.checkpoints.map((c: { id: string; is_head: boolean }) => [c.id, c.is_head])).toEqual([[c2.body.id, true]]);
    const page2 = await call(key, "GET", `/v1/threads/${id}/history?limit=1&before=${page1.body.next_before}`);
    expect(page2.body).toMatchObject({ checkpoints: [{ id: c1.body.id, is_head: false }], next_before: null });
    // A `before` that is no checkpoint of the thread is refused, as the thread list's cursor is: it paged silently from wherever it sorted.
    const stray = await call(key, "GET", `/v1/threads/${id}/history?before=garbage`);
    expect([stray.status, stray.body.error?.code]).toEqual([400, "BEM-011"]);

    const fork = await call(key, "POST", `/v1/threads/${id}/fork`, { checkpoint_id: c1.body.id });
    expect(fork.status).toBe(200);
    expect(fork.body).toMatchObject({ parent_id: c1.body.id, source: "fork" });
    expect((await call(key, "GET", `/v1/threads/${id}/state`)).body.channels.topic).toBeUndefined();

    expect((await call(key, "DELETE", `/v1/threads/${id}`)).status).toBe(204);
    const gone = await call(key, "GET", `/v1/threads/${id}/state`);
    expect(gone).toEqual({ status: 404, body: { error: { code: "BEM-036", message: expect.any(String) } } });
    expect((await call(key, "DELETE", `/v1/threads/${id}`)).status).toBe(404);
  });

  it("lists the tenant's threads, newest update first, paged", async () => {
    const { key } = await tenantKey("admin");
    const ids = [unique("a"), unique("b"), unique("c")];
    for (const id of ids) {
      await call(key, "POST", `/v1/threads/${id}/state`, appendBody("x"));
      await new Promise((r) => setTimeout(r, 5)); // distinct updated_at
    }
    await call(key, "POST", `/v1/threads/${ids[0]}/state`, appendBody("bump"));
    const p1 = await call(key, "GET", `/v1/threads?limit=2`);
    expect(p1.status).toBe(200);
    expect(p1.body.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual([ids[0], ids[2]]);
    const p2 = await call(key, "GET", `/v1/threads?limit=2&before=${encodeURIComponent(p1.body.next_before)}`);
    expect(p2.body).toMatchObject({ threads: [{ thread_id: ids[1] }], next_before: null });
    expect((await call(key, "GET", `/v1/threads?before=garbage`)).body.error.code).toBe("BEM-011");
  });

  it("threads written through the client (the pipeline path) are listed and readable", async () => {
    const { tenant, key } = await tenantKey("member");
    const id = unique("pipe");
    await new ThreadClient(env, tenant, id).appendMessages([user("hi"), { role: "assistant", content: "hello" }], "input");
    const list = await call(key, "GET", `/v1/threads`);
    expect(list.body.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual([id]);
    const s = await call(key, "GET", `/v1/threads/${id}/state`);
    expect(s.body.channels.messages).toHaveLength(2);
  });

  it("tenants never see each other's threads, even with the same thread id", async () => {
    const a = await tenantKey("admin");
    const b = await tenantKey("admin");
    const id = unique("shared");
    await call(a.key, "POST", `/v1/threads/${id}/state`, appendBody("secret of a"));
    expect((await call(b.key, "GET", `/v1/threads/${id}/state`)).status).toBe(404);
    expect((await call(b.key, "GET", `/v1/threads`)).body.threads).toEqual([]);
    await call(b.key, "POST", `/v1/threads/${id}/state`, appendBody("b's own"));
    const sb = await call(b.key, "GET", `/v1/threads/${id}/state`);
    expect(sb.body.channels.messages.map((m: { content: string }) => m.content)).toEqual(["b's own"]);
    const sa = await call(a.key, "GET", `/v1/threads/${id}/state`);
    expect(sa.body.channels.messages.map((m: { content: string }) => m.content)).toEqual(["secret of a"]);
  });

  it("members may read but not repair, fork or delete (BEM-022)", async () => {
    const { tenant, key } = await tenantKey("member");
    const id = unique("m");
    const cp = await new ThreadClient(env, tenant, id).appendMessages([user("x")], "input");
    expect((await call(key, "GET", `/v1/threads/${id}/history`)).status).toBe(200);
    for (const [method, path, body] of [
      ["POST", `/v1/threads/${id}/state`, appendBody("y")],
      ["POST", `/v1/threads/${id}/fork`, { checkpoint_id: cp.id }],
      ["DELETE", `/v1/threads/${id}`, undefined],
    ] as const) {
      const r = await call(key, method, path, body);
      expect([r.status, r.body.error.code]).toEqual([403, "BEM-022"]);
    }
    expect((await call(key, "GET", `/v1/threads/${id}/state`)).body.channels.messages).toHaveLength(1);
  });

  it("bad ids, bad ops, unknown message ids and oversized messages: coded 4xx, thread unchanged", async () => {
    const { key } = await tenantKey("admin");
    const id = unique("v");
    await call(key, "POST", `/v1/threads/${id}/state`, appendBody("keep"));
    const before = (await call(key, "GET", `/v1/threads/${id}/state`)).body;

    const badId = await call(key, "GET", `/v1/threads/bad%20id/state`);
    expect([badId.status, badId.body.error.code]).toEqual([400, "BEM-030"]);
    const longId = await call(key, "POST", `/v1/threads/${"x".repeat(129)}/state`, appendBody("x"));
    expect([longId.status, longId.body.error.code]).toEqual([400, "BEM-030"]);

    for (const body of [{ ops: [{ op: "explode" }] }, { ops: [] }, { nope: 1 }, { ops: [{ op: "append", messages: [{ role: "robot", content: "x" }] }] }]) {
      const r = await call(key, "POST", `/v1/threads/${id}/state`, body);
      expect([r.status, r.body.error.code]).toEqual([400, "BEM-035"]);
    }
    const missing = await call(key, "POST", `/v1/threads/${id}/state`, {
      ops: [
        { op: "append", messages: [user("lost")] },
        { op: "remove", id: "ghost" },
      ],
    });
    expect([missing.status, missing.body.error.code]).toEqual([404, "BEM-031"]);
    const clash = await call(key, "POST", `/v1/threads/${id}/state`, {
      ops: [
        { op: "set", channel: "c", value: [1] },
        { op: "set", channel: "c", reducer: "append", value: [2] },
      ],
    });
    expect([clash.status, clash.body.error.code]).toEqual([400, "BEM-037"]);
    const big = await call(key, "POST", `/v1/threads/${id}/state`, appendBody("z".repeat(Number(env.MAX_MESSAGE_BYTES) + 1)));
    expect(big.status).toBe(413);
    expect(["BEM-033", "BEM-013"]).toContain(big.body.error.code);
    const badCp = await call(key, "GET", `/v1/threads/${id}/state?checkpoint_id=00000000000000000000`);
    expect([badCp.status, badCp.body.error.code]).toEqual([404, "BEM-032"]);

    expect((await call(key, "GET", `/v1/threads/${id}/state`)).body).toEqual(before);
    expect((await call(key, "GET", `/v1/threads/${id}/history`)).body.checkpoints).toHaveLength(1);
  });

  it("documents the routes in /openapi.json", async () => {
    const doc = (await (await exports.default.fetch("http://x/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    expect(Object.keys(doc.paths["/v1/threads/{id}/state"] ?? {}).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths["/v1/threads/{id}/state"]?.post?.responses ?? {})).toEqual(expect.arrayContaining(["200", "400", "403", "404", "413"]));
    for (const p of ["/v1/threads", "/v1/threads/{id}/history", "/v1/threads/{id}/fork", "/v1/threads/{id}"]) expect(doc.paths[p]).toBeDefined();
  });
});
