import { beforeAll, describe, expect, it } from "vitest";
import { api, createTenant, OPERATOR_KEY, type TestTenant } from "../support/tenants";
import { deliver, deliveryCount, registerHook } from "../webhooks/helpers";

/**
 * Issue 11, finding 7: `.` and `..` are dot-segments URL parsers remove, so a
 * thread or tenant with such an id could be created but never addressed again.
 * No id made only of dots is born anywhere.
 */
let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});

const DOTS = [".", "..", "...", "...."];
const code = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;
const threadCount = async () => ((await (await api("/v1/threads?limit=100", { key: t.adminKey })).json()) as { threads: unknown[] }).threads.length;

describe("ids made only of dots are refused where they are born", () => {
  it.each(DOTS)("chat thread_id / X-Thread-Id / invoke session_id %j → 400 BEM-030, nothing stored", async (id) => {
    const before = await threadCount();
    const chat = await api("/v1/chat/completions", { key: t.adminKey, body: { model: "auto", thread_id: id, messages: [{ role: "user", content: "hi" }] } });
    expect(chat.status).toBe(400);
    expect(await code(chat)).toBe("BEM-030");
    const header = await api("/v1/chat/completions", {
      key: t.adminKey,
      headers: { "x-thread-id": id },
      body: { model: "auto", messages: [{ role: "user", content: "hi" }] },
    });
    expect(header.status).toBe(400);
    expect(await code(header)).toBe("BEM-030");
    const invoke = await api("/v1/invoke", { key: t.adminKey, body: { agent_name: "assistant", session_id: id, content: [{ type: "text", text: "hi" }] } });
    expect(invoke.status).toBe(400);
    expect(await code(invoke)).toBe("BEM-030");
    const summarize = await api("/v1/tasks/summarize", { key: t.adminKey, body: { thread_id: id } });
    expect(summarize.status).toBe(400);
    expect(await threadCount()).toBe(before);
  });

  it.each(DOTS)("tenant id %j → 400, no tenant", async (id) => {
    const res = await api("/v1/admin/tenants", { key: OPERATOR_KEY, body: { id } });
    expect(res.status).toBe(400);
    const list = (await (await api("/v1/admin/tenants?limit=1000", { key: OPERATOR_KEY })).json()) as { tenants: { id: string }[] };
    expect(list.tenants.map((x) => x.id)).not.toContain(id);
  });

  it.each(DOTS)("a webhook payload naming thread %j → 422 BEM-095, no delivery", async (id) => {
    const hook = await registerHook(t);
    const res = await deliver(hook, { ticket: { id, body: "hello" } });
    expect(res.status).toBe(422);
    expect(await code(res)).toBe("BEM-095");
    expect(await deliveryCount(hook.id)).toBe(0);
  });

  it.each(DOTS)("scope id %j → 400 BEM-060", async (id) => {
    const res = await api("/v1/memory/facts", { key: t.adminKey, body: { scope: `organization:${id}`, kind: "note", text: "x" } });
    expect(res.status).toBe(400);
    expect(await code(res)).toBe("BEM-060");
  });

  it.each(DOTS)("message id %j in a state append → 400, nothing stored", async (id) => {
    const res = await api("/v1/threads/dots-msg/state", { key: t.adminKey, body: { ops: [{ op: "append", messages: [{ id, role: "user", content: "x" }] }] } });
    expect(res.status).toBe(400);
    expect((await api("/v1/threads/dots-msg/state", { key: t.adminKey })).status).toBe(404);
  });

  it("ids with dots among other characters stay valid", async () => {
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "auto", thread_id: "a.b..c", messages: [{ role: "user", content: "hi" }] },
    });
    expect(res.status).toBe(200);
    expect((await api("/v1/threads/a.b..c/state", { key: t.adminKey })).status).toBe(200);
  });
});
