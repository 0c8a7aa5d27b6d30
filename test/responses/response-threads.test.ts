import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { purgeExpiredThreads } from "../../src/thread/purge-expired";
import { RESPONSE_THREAD_TTL_MS } from "../../src/thread/thread-list";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { uniqueThread } from "../support/runs";

/**
 * Every one-off Responses call (the AI SDK's and the Agents SDK's default) became a thread like any
 * conversation: listed with them in the inspector and GET /v1/threads, counted against
 * MAX_THREADS_PER_TENANT, kept forever. Now its thread is of kind "response": listed apart (a filter),
 * counted on its own quota, kept 30 days after its last write as OpenAI keeps stored responses, then
 * deleted by the hourly cron. store: false stores nothing at all.
 */
type Summary = { thread_id: string; kind: string; expires_at: number | null };
const threads = async (t: TestTenant, kind?: string) =>
  ((await (await api(`/v1/threads?limit=100${kind ? `&kind=${kind}` : ""}`, { key: t.adminKey })).json()) as { threads: Summary[] }).threads;
const counted = async (t: TestTenant, kind: string) =>
  (await env.DB.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = ?").bind(t.tenant, kind).first<{ n: number }>())?.n ?? 0;
const respond = async (t: TestTenant, body: Record<string, unknown>) => {
  const res = await api("/v1/responses", { key: t.adminKey, body: { model: "gpt-4o-mini", input: "hi", ...body } });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { id: string; edgeweave: { thread_id: string | null } };
};
const chat = async (t: TestTenant, thread: string) => {
  const res = await api("/v1/chat/completions", {
    key: t.adminKey,
    body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "hi" }] },
  });
  expect(res.status).toBe(200);
};

describe("one-off Responses calls' threads", () => {
  it("are listed as kind response, apart from conversations, expire 30 days after their last write, and take no conversation room", async () => {
    const t = await createTenant();
    fakeOpenAI().reply("a").reply("b").reply("c");
    const conversation = uniqueThread();
    await chat(t, conversation);
    const before = Date.now();
    const one = await respond(t, {});
    const thread = one.edgeweave.thread_id!;

    const all = await threads(t);
    expect(all.find((x) => x.thread_id === conversation)).toMatchObject({ kind: "conversation", expires_at: null });
    const listed = all.find((x) => x.thread_id === thread)!;
    expect(listed.kind).toBe("response");
    expect(listed.expires_at).toBeGreaterThanOrEqual(before + RESPONSE_THREAD_TTL_MS);
    expect((await threads(t, "conversation")).map((x) => x.thread_id)).toEqual([conversation]);
    expect((await threads(t, "response")).map((x) => x.thread_id)).toEqual([thread]);
    expect(await counted(t, "threads")).toBe(1);
    expect(await counted(t, "response_threads")).toBe(1);

    // Continuing it (previous_response_id) keeps it a response thread and moves its expiry.
    await env.DB.prepare("UPDATE threads SET updated_at = updated_at - 1000, expires_at = expires_at - 1000 WHERE tenant_id = ? AND thread_id = ?")
      .bind(t.tenant, thread)
      .run();
    await respond(t, { previous_response_id: one.id });
    await scheduler.wait(1_100); // the later write's list update is sent with the object's next bookkeeping batch
    const moved = (await threads(t, "response"))[0]!;
    expect(moved.expires_at).toBeGreaterThan(listed.expires_at!);
  });

  it("the cron deletes one past its expiry (thread, stored responses, count); conversations stay", async () => {
    const t = await createTenant();
    fakeOpenAI().reply("a").reply("b");
    const conversation = uniqueThread();
    await chat(t, conversation);
    const one = await respond(t, {});
    const thread = one.edgeweave.thread_id!;
    await purgeExpiredThreads(env);
    expect((await threads(t)).length).toBe(2);

    await env.DB.prepare("UPDATE threads SET expires_at = ? WHERE tenant_id = ? AND thread_id = ?")
      .bind(Date.now() - 1, t.tenant, thread)
      .run();
    await purgeExpiredThreads(env);
    expect((await threads(t)).map((x) => x.thread_id)).toEqual([conversation]);
    expect((await api(`/v1/responses/${one.id}`, { key: t.adminKey })).status).toBe(404);
    expect((await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).status).toBe(404);
    expect(await counted(t, "response_threads")).toBe(0);
    expect(await counted(t, "threads")).toBe(1);
  });

  it("store: false stores nothing: no thread, no list row, no response", async () => {
    const t = await createTenant();
    fakeOpenAI().reply("a");
    const r = await respond(t, { store: false });
    expect(r.edgeweave.thread_id).toBeNull();
    expect(await threads(t)).toEqual([]);
    expect((await api(`/v1/responses/${r.id}`, { key: t.adminKey })).status).toBe(404);
    const rows = await env.DB.prepare("SELECT (SELECT COUNT(*) FROM threads WHERE tenant_id = ?1) + (SELECT COUNT(*) FROM responses WHERE tenant_id = ?1) AS n")
      .bind(t.tenant)
      .first<{ n: number }>();
    expect(rows?.n).toBe(0);
  });
});
