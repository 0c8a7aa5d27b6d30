import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { recordDeadLetter } from "../../src/tasks/store";
import { api, createTenant, OPERATOR_KEY, type TestTenant } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});
const uid = () => crypto.randomUUID().slice(0, 8);

async function code(res: Response): Promise<[number, string]> {
  return [res.status, ((await res.json()) as { error: { code: string } }).error.code];
}

/** Polls the task status route until the task leaves "pending". */
async function settled(taskId: string, key = t.adminKey) {
  return waitFor(`task ${taskId}`, async () => {
    const s = (await (await api(`/v1/tasks/${taskId}`, { key })).json()) as { status: string; result?: unknown; reason?: string };
    return s.status === "pending" ? undefined : s;
  });
}

describe("POST /v1/memory/tasks (through the real queue)", () => {
  it("remember then forget, asynchronously", async () => {
    const scope = `organization:o-${uid()}`;
    const res = await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope, kind: "style", text: "Be brief." } });
    expect(res.status).toBe(202);
    const { task_id } = (await res.json()) as { task_id: string };
    const done = await settled(task_id);
    expect(done.status).toBe("done");
    const factId = (done.result as { fact_id: string }).fact_id;
    const list = (await (await api(`/v1/memory/facts?scope=${scope}`, { key: t.adminKey })).json()) as { facts: { id: string; text: string }[] };
    expect(list.facts.map((f) => [f.id, f.text])).toEqual([[factId, "Be brief."]]);

    const forget = await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "forget", fact_id: factId } });
    expect(forget.status).toBe(202);
    expect((await settled(((await forget.json()) as { task_id: string }).task_id)).status).toBe("done");
    expect(((await (await api(`/v1/memory/facts?scope=${scope}`, { key: t.adminKey })).json()) as { facts: unknown[] }).facts).toEqual([]);
  });

  it("checks what it can up front: role, scope, kind, text, the fact's existence", async () => {
    expect(await code(await api("/v1/memory/tasks", { key: t.memberKey, body: { op: "remember", scope: "organization:a", kind: "k", text: "x" } }))).toEqual([
      403,
      "BEM-022",
    ]);
    expect(await code(await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope: "Bad Scope", kind: "k", text: "x" } }))).toEqual([
      400,
      "BEM-060",
    ]);
    expect(await code(await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope: "system", kind: "k", text: "x" } }))).toEqual([
      403,
      "BEM-022",
    ]);
    expect(
      await code(await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope: "organization:a", kind: "Bad Kind", text: "x" } })),
    ).toEqual([400, "BEM-063"]);
    expect(await code(await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope: "organization:a", kind: "k", text: "  " } }))).toEqual([
      400,
      "BEM-064",
    ]);
    expect(await code(await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "forget", fact_id: "nope" } }))).toEqual([404, "BEM-061"]);
    expect(await code(await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "explode" } }))).toEqual([400, "BEM-011"]);
  });

  it("a queued remember takes key, ttl_seconds and expires_at as POST /v1/memory/facts does: a key replaces, an expiry is kept", async () => {
    // They were refused (BEM-011) while the synchronous remember takes them: the background write of a keyed or expiring fact had no way.
    const scope = `organization:o-${uid()}`;
    const queue = async (extra: Record<string, unknown>, text: string) => {
      const res = await api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope, kind: "profile", text, ...extra } });
      expect(res.status).toBe(202);
      return settled(((await res.json()) as { task_id: string }).task_id);
    };
    const before = Date.now();
    const first = await queue({ key: "home-city", ttl_seconds: 3600 }, "Lives in Lisbon.");
    expect(first).toMatchObject({ status: "done", result: { replaced: false } });
    const second = await queue({ key: "home-city", ttl_seconds: 7200 }, "Lives in Porto.");
    expect(second).toMatchObject({ status: "done", result: { fact_id: (first.result as { fact_id: string }).fact_id, replaced: true } });
    const at = Date.now() + 86_400_000;
    await queue({ expires_at: at }, "Travelling this week.");

    type Listed = { facts: { id: string; text: string; key: string | null; expires_at: number | null }[] };
    const list = ((await (await api(`/v1/memory/facts?scope=${scope}`, { key: t.adminKey })).json()) as Listed).facts;
    expect(list.map((f) => [f.text, f.key])).toEqual([
      ["Lives in Porto.", "home-city"],
      ["Travelling this week.", null],
    ]);
    // The expiry is fixed when the task is queued (a retried task does not move it).
    expect(list[0]!.expires_at).toBeGreaterThanOrEqual(before + 7_200_000);
    expect(list[0]!.expires_at).toBeLessThanOrEqual(Date.now() + 7_200_000);
    expect(list[1]!.expires_at).toBe(at);
    const history = (await (await api(`/v1/memory/facts/${list[0]!.id}/history`, { key: t.adminKey })).json()) as { versions: { text: string }[] };
    expect(history.versions.map((v) => v.text)).toEqual(["Lives in Lisbon."]);
  });

  it("checks key and expiry as the synchronous remember does (BEM-140, BEM-141), nothing queued; any other field is BEM-011 naming it", async () => {
    const scope = `organization:o-${uid()}`;
    const remember = (extra: Record<string, unknown>) =>
      api("/v1/memory/tasks", { key: t.adminKey, body: { op: "remember", scope, kind: "style", text: "Lives in Lisbon.", ...extra } });
    expect(await code(await remember({ key: "bad key!" }))).toEqual([400, "BEM-140"]);
    expect(await code(await remember({ ttl_seconds: 0 }))).toEqual([400, "BEM-141"]);
    expect(await code(await remember({ ttl_seconds: 60, expires_at: Date.now() + 60_000 }))).toEqual([400, "BEM-141"]);
    expect(await code(await remember({ expires_at: Date.now() - 1000 }))).toEqual([400, "BEM-141"]);
    const unknown = await remember({ keep_for: 60 });
    expect(unknown.status).toBe(400);
    const error = ((await unknown.json()) as { error: { code: string; message: string } }).error;
    expect([error.code, error.message.includes("keep_for")]).toEqual(["BEM-011", true]);
    const summary = await api("/v1/tasks/summarize", { key: t.adminKey, body: { thread_id: `t-${uid()}`, keep: 4 } });
    expect(await code(summary)).toEqual([400, "BEM-011"]);
    const facts = (await (await api(`/v1/memory/facts?scope=${scope}`, { key: t.adminKey })).json()) as { facts: unknown[] };
    expect(facts.facts).toEqual([]);
  });
});

describe("dead letters", () => {
  it("a malformed message sent to the queue ends up as its tenant's dead letter", async () => {
    const marker = `bogus-${uid()}`;
    await env.TASKS.send({ id: marker, kind: "remember_memory", tenant: t.tenant, scope: 42 }, { contentType: "json" });
    const row = await waitFor("dead letter", async () => {
      const page = (await (await api("/v1/tasks/dead-letters", { key: t.adminKey })).json()) as { dead_letters: { body: string; reason: string }[] };
      return page.dead_letters.find((d) => d.body.includes(marker));
    });
    expect(row.reason).toMatch(/^malformed task: /);
  });

  it("each tenant sees only its own, newest first, paged; members may not look", async () => {
    const a = await createTenant();
    const b = await createTenant();
    for (let i = 0; i < 3; i++)
      await recordDeadLetter(env.DB, { tenant: a.tenant, taskId: `a-${i}`, kind: "forget_memory", body: "{}", reason: `r${i}`, attempts: 5 }, 1000 + i);
    await recordDeadLetter(env.DB, { tenant: b.tenant, taskId: "b-0", kind: "forget_memory", body: "{}", reason: "secret-of-b", attempts: 5 });

    const p1 = (await (await api("/v1/tasks/dead-letters?limit=2", { key: a.adminKey })).json()) as {
      dead_letters: { task_id: string }[];
      next_cursor: string | null;
    };
    expect(p1.dead_letters.map((d) => d.task_id)).toEqual(["a-2", "a-1"]);
    const p2 = (await (await api(`/v1/tasks/dead-letters?limit=2&cursor=${encodeURIComponent(p1.next_cursor!)}`, { key: a.adminKey })).json()) as {
      dead_letters: { task_id: string }[];
      next_cursor: string | null;
    };
    expect(p2.dead_letters.map((d) => d.task_id)).toEqual(["a-0"]);
    expect(p2.next_cursor).toBeNull();

    const bList = await (await api("/v1/tasks/dead-letters", { key: b.adminKey })).text();
    expect(bList).toContain("secret-of-b");
    expect(bList).not.toContain('"a-0"');
    expect(await code(await api("/v1/tasks/dead-letters", { key: a.memberKey }))).toEqual([403, "BEM-022"]);
    // Another tenant's task id reads as pending, like an unknown one.
    expect(await (await api("/v1/tasks/b-0", { key: a.adminKey })).json()).toEqual({ task_id: "b-0", status: "pending" });
    expect(await (await api("/v1/tasks/b-0", { key: b.adminKey })).json()).toEqual({ task_id: "b-0", status: "dead_lettered", reason: "secret-of-b" });
  });
});

describe("POST /v1/tasks/summarize", () => {
  it("summarizes a thread in the background", async () => {
    const threadId = `sum-${uid()}`;
    for (let i = 0; i < 4; i++) {
      expect(
        (
          await api("/v1/chat/completions", {
            key: t.adminKey,
            body: { model: "offline-echo", thread_id: threadId, messages: [{ role: "user", content: `turn ${i}` }] },
          })
        ).status,
      ).toBe(200);
    }
    const res = await api("/v1/tasks/summarize", { key: t.adminKey, body: { thread_id: threadId, keep_messages: 2 } });
    expect(res.status).toBe(202);
    const s = await settled(((await res.json()) as { task_id: string }).task_id);
    expect(s).toMatchObject({ status: "done", result: { summarized: 6 } });
    const state = (await (await api(`/v1/threads/${threadId}/state`, { key: t.adminKey })).json()) as { channels: { messages: { role: string }[] } };
    expect(state.channels.messages.map((m) => m.role)).toEqual(["user", "user", "assistant"]); // the summary is a labelled user message
  });

  it("needs a tenant admin key and a valid thread id", async () => {
    expect(await code(await api("/v1/tasks/summarize", { key: t.memberKey, body: { thread_id: "x" } }))).toEqual([403, "BEM-022"]);
    expect(await code(await api("/v1/tasks/summarize", { key: OPERATOR_KEY, body: { thread_id: "x" } }))).toEqual([403, "BEM-022"]);
    expect(await code(await api("/v1/tasks/summarize", { key: t.adminKey, body: { thread_id: "bad id" } }))).toEqual([400, "BEM-030"]);
  });
});
