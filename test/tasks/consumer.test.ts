import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { consumeTask, consumeTaskBatch, MAX_ATTEMPTS, retryDelaySeconds } from "../../src/tasks/consumer";
import type { TaskContext } from "../../src/tasks/handlers";
import type { TaskInput } from "../../src/queue/messages";
import type { ThreadDO } from "../../src/object/thread-object";
import { ThreadClient } from "../../src/thread/client";
import { claimDelivery, insertWebhook } from "../../src/webhooks/store";
import { createTenant, type TestTenant } from "../support/tenants";
import { clearUpstream, mockUpstream } from "../support/upstream";
import { FakeMessage } from "./fake-message";

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});
afterEach(() => clearUpstream());

const pending: Promise<unknown>[] = [];
const ctx: TaskContext = { env, waitUntil: (p) => void pending.push(p) };
const uid = () => crypto.randomUUID().slice(0, 8);
const task = (body: TaskInput) => ({ id: `task-${uid()}`, ...body });

const facts = async (tenant: string, scope: string) =>
  (
    await env.DB.prepare("SELECT id, text FROM facts WHERE tenant_id = ? AND scope = ? ORDER BY created_at, id")
      .bind(tenant, scope)
      .all<{ id: string; text: string }>()
  ).results;
const deadLetters = async (where: string, arg: string) =>
  (
    await env.DB.prepare(`SELECT tenant_id, task_id, kind, body, reason, attempts FROM dead_letters WHERE ${where} = ?`)
      .bind(arg)
      .all<{ tenant_id: string; task_id: string | null; kind: string | null; body: string; reason: string; attempts: number }>()
  ).results;
const doneRow = (id: string) => env.DB.prepare("SELECT kind, result FROM tasks_done WHERE task_id = ?").bind(id).first<{ kind: string; result: string }>();

describe("memory tasks", () => {
  it("remember_memory stores the fact once; a redelivered task is acked with no second effect", async () => {
    const scope = `organization:o-${uid()}`;
    const body = task({ kind: "remember_memory", tenant: t.tenant, scope, fact_kind: "style", text: "Use short sentences." });
    const m1 = new FakeMessage(body);
    expect(await consumeTask(ctx, m1)).toBe("done");
    expect(m1.acked).toBe(1);
    const stored = await facts(t.tenant, scope);
    expect(stored.map((f) => f.text)).toEqual(["Use short sentences."]);
    expect(JSON.parse((await doneRow(body.id))!.result)).toEqual({ fact_id: stored[0]!.id, replaced: false, existing: false });

    const m2 = new FakeMessage(body, 2);
    expect(await consumeTask(ctx, m2)).toBe("duplicate");
    expect(m2.acked).toBe(1);
    expect(await facts(t.tenant, scope)).toHaveLength(1);
  });

  it("forget_memory deletes the fact; forgetting it again is still success", async () => {
    const scope = `organization:o-${uid()}`;
    await consumeTask(ctx, new FakeMessage(task({ kind: "remember_memory", tenant: t.tenant, scope, fact_kind: "note", text: "temporary" })));
    const [fact] = await facts(t.tenant, scope);
    const forget = task({ kind: "forget_memory", tenant: t.tenant, fact_id: fact!.id });
    expect(await consumeTask(ctx, new FakeMessage(forget))).toBe("done");
    expect(await facts(t.tenant, scope)).toEqual([]);
    expect(JSON.parse((await doneRow(forget.id))!.result)).toEqual({ fact_id: fact!.id, deleted: true });
    const again = task({ kind: "forget_memory", tenant: t.tenant, fact_id: fact!.id });
    expect(await consumeTask(ctx, new FakeMessage(again))).toBe("done");
    expect(JSON.parse((await doneRow(again.id))!.result)).toEqual({ fact_id: fact!.id, deleted: false });
  });

  it("a task is bound to its tenant: forgetting another tenant's fact deletes nothing", async () => {
    const other = await createTenant();
    const scope = `organization:o-${uid()}`;
    await consumeTask(ctx, new FakeMessage(task({ kind: "remember_memory", tenant: other.tenant, scope, fact_kind: "note", text: "theirs" })));
    const [fact] = await facts(other.tenant, scope);
    await consumeTask(ctx, new FakeMessage(task({ kind: "forget_memory", tenant: t.tenant, fact_id: fact!.id })));
    expect(await facts(other.tenant, scope)).toHaveLength(1);
  });

  it("a permanent failure (invalid scope) is dead-lettered at once with its coded reason", async () => {
    const body = task({ kind: "remember_memory", tenant: t.tenant, scope: "Not A Scope", fact_kind: "note", text: "x" });
    const m = new FakeMessage(body);
    expect(await consumeTask(ctx, m)).toBe("dead-lettered");
    expect(m.acked).toBe(1);
    expect(m.retries).toEqual([]);
    const [dl] = await deadLetters("task_id", body.id);
    expect(dl).toMatchObject({ tenant_id: t.tenant, kind: "remember_memory", attempts: 1 });
    expect(dl!.reason).toMatch(/^permanent failure: BEM-060: /);
    expect(JSON.parse(dl!.body)).toEqual(body);
    expect(await doneRow(body.id)).toBeNull();
  });
});

describe("a queued remember with a key or an expiry", () => {
  it("an expiry that passed while the task waited is dead-lettered with BEM-141, and the keyed fact it would replace stays", async () => {
    const scope = `organization:o-${uid()}`;
    const keep = task({ kind: "remember_memory", tenant: t.tenant, scope, fact_kind: "note", text: "Lives in Lisbon.", key: "city" });
    expect(await consumeTask(ctx, new FakeMessage(keep))).toBe("done");
    const late = task({
      kind: "remember_memory",
      tenant: t.tenant,
      scope,
      fact_kind: "note",
      text: "Lives in Porto.",
      key: "city",
      expires_at: Date.now() - 1,
    });
    const m = new FakeMessage(late);
    expect(await consumeTask(ctx, m)).toBe("dead-lettered");
    expect(m.retries).toEqual([]);
    const [dl] = await deadLetters("task_id", late.id);
    expect(dl!.reason).toMatch(/^permanent failure: BEM-141: /);
    expect((await facts(t.tenant, scope)).map((f) => f.text)).toEqual(["Lives in Lisbon."]);
  });
});

describe("malformed tasks", () => {
  it.each([
    ["not an object", "hello"],
    ["null", null],
    ["unknown kind", { id: "x1", kind: "format_disk", tenant: "t" }],
    ["missing fields", { id: "x2", kind: "remember_memory", tenant: "t" }],
    ["wrong types", { id: 5, kind: "forget_memory", tenant: "t", fact_id: ["a"] }],
    ["oversized text", { id: "x3", kind: "remember_memory", tenant: "t", scope: "a", fact_kind: "b", text: "x".repeat(20_000) }],
  ])("%s → dead-lettered immediately, acked, no throw", async (_name, body) => {
    const m = new FakeMessage(body);
    expect(await consumeTask(ctx, m)).toBe("dead-lettered");
    expect(m.acked).toBe(1);
    expect(m.retries).toEqual([]);
  });

  it("the dead letter keeps the reason and the body; the owner is taken from the body when it names one", async () => {
    const marker = `m-${uid()}`;
    await consumeTask(ctx, new FakeMessage({ id: marker, kind: "remember_memory", tenant: t.tenant }));
    const rows = (await deadLetters("tenant_id", t.tenant)).filter((r) => r.body.includes(marker));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.reason).toMatch(/^malformed task: /);
    expect(rows[0]!.task_id).toBeNull();
  });

  it("any JSON value: the consumer never throws and takes exactly one decision", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (body) => {
        const m = new FakeMessage(body);
        await consumeTask(ctx, m);
        expect(m.decisions).toBe(1);
      }),
      { seed: 11, numRuns: 60 },
    );
  });
});

describe("retries and dead letters", () => {
  /** A hook with a callback that always answers 500, and an accepted delivery: a real transient failure. */
  async function failingDelivery() {
    mockUpstream("https://down.example.com", () => new Response("down", { status: 500 }));
    const hook = await insertWebhook(env.DB, t.tenant, {
      name: "h",
      agent_name: "assistant",
      thread_from: "/t",
      text_from: "/x",
      callback_url: "https://down.example.com/cb",
      secret: "whsec_test",
      scopes: ["session:*", "organization:acme"],
      rewrite_history: true,
      write_facts: false,
    });
    const threadId = `th-${uid()}`;
    const deliveryId = `d-${uid()}`;
    await claimDelivery(env.DB, { webhookId: hook.id, deliveryId, tenant: t.tenant, threadId, input: "hello" });
    return { hook, threadId, deliveryId, body: task({ kind: "run_webhook", tenant: t.tenant, webhook_id: hook.id, delivery_id: deliveryId }) };
  }
  const status = (hookId: string, deliveryId: string) =>
    env.DB.prepare("SELECT status, result FROM webhook_deliveries WHERE webhook_id = ? AND delivery_id = ?")
      .bind(hookId, deliveryId)
      .first<{ status: string; result: string }>();

  it("a failing task is retried with growing delays, runs its turn only once, then is dead-lettered with the reason", async () => {
    const { hook, threadId, deliveryId, body } = await failingDelivery();
    const delays: number[] = [];
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      const m = new FakeMessage(body, attempt);
      expect(await consumeTask(ctx, m)).toBe("retried");
      expect(m.acked).toBe(0);
      delays.push(m.retries[0]!.delaySeconds!);
    }
    // 10, 20, 40, 80 s, each less up to 20% of jitter.
    expect(delays).toHaveLength(4);
    delays.forEach((d, i) => {
      expect(d).toBeLessThanOrEqual(10 * 2 ** i);
      expect(d).toBeGreaterThanOrEqual(8 * 2 ** i);
    });
    expect((await status(hook.id, deliveryId))!.status).toBe("replied");

    const last = new FakeMessage(body, MAX_ATTEMPTS);
    expect(await consumeTask(ctx, last)).toBe("dead-lettered");
    expect(last.acked).toBe(1);
    const [dl] = await deadLetters("task_id", body.id);
    expect(dl!.reason).toMatch(/^failed 5 attempts: callback failed after 3 attempts \(last: HTTP 500\)/);
    expect(dl!.attempts).toBe(MAX_ATTEMPTS);
    const row = await status(hook.id, deliveryId);
    expect(row!.status).toBe("failed");
    expect(JSON.parse(row!.result)).toMatchObject({ thread_id: threadId, error: dl!.reason });
    // Five deliveries of the task, one turn in the thread.
    const state = await new ThreadClient(env, t.tenant, threadId).getState();
    expect(state.channels.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("backoff grows with attempts and is capped", () => {
    expect([1, 2, 3, 4, 5, 6, 10].map((a) => retryDelaySeconds(a, () => 0))).toEqual([10, 20, 40, 80, 160, 300, 300]);
    // Jitter takes off up to 20%, never adds.
    expect([1, 2, 6].map((a) => retryDelaySeconds(a, () => 1))).toEqual([8, 16, 240]);
  });

  it("a batch: each message gets its own decision", async () => {
    const scope = `organization:o-${uid()}`;
    const good = new FakeMessage(task({ kind: "remember_memory", tenant: t.tenant, scope, fact_kind: "note", text: "batched" }));
    const bad = new FakeMessage({ nonsense: true });
    await consumeTaskBatch({ messages: [good, bad] as unknown as Message<unknown>[] }, env, { waitUntil: (p) => void pending.push(p) });
    expect([good.acked, bad.acked]).toEqual([1, 1]);
    expect(await facts(t.tenant, scope)).toHaveLength(1);
  });
});

describe("summarize_thread", () => {
  it("replaces the older messages with one labelled summary and keeps the newest", async () => {
    const threadId = `sum-${uid()}`;
    const thread = new ThreadClient(env, t.tenant, threadId);
    for (let i = 0; i < 5; i++) {
      await thread.appendMessages(
        [
          { role: "user", content: `question ${i}` },
          { role: "assistant", content: `answer ${i}` },
        ],
        "input",
      );
    }
    const body = task({ kind: "summarize_thread", tenant: t.tenant, thread_id: threadId, keep_messages: 2 });
    expect(await consumeTask(ctx, new FakeMessage(body))).toBe("done");
    const msgs = (await thread.getState()).channels.messages;
    expect(msgs).toHaveLength(3);
    expect(msgs[0]!.role).toBe("user"); // a labelled summary, not a system message
    expect(String(msgs[0]!.content)).toMatch(/^\[Summary of the earlier conversation[^\n]*\]\n<summary>\n\S[\s\S]*\n<\/summary>$/);
    expect(msgs.slice(1).map((m) => m.content)).toEqual(["question 4", "answer 4"]);
    expect(JSON.parse((await doneRow(body.id))!.result)).toEqual({ summarized: 8 });
  });

  it("runs in the thread's object like a turn: it waits for the run holding the thread, and no write lands between its read and its save", async () => {
    const threadId = `sum-${uid()}`;
    const thread = new ThreadClient(env, t.tenant, threadId);
    for (let i = 0; i < 3; i++) await thread.appendMessages([{ role: "user", content: `question ${i}` }], "input");
    const stub = env.THREADS.get(env.THREADS.idFromName(`${t.tenant}:${threadId}`));
    const holder = await runInDurableObject(stub, (o: ThreadDO) => o.leases.take(0));
    const summarizing = consumeTask(ctx, new FakeMessage(task({ kind: "summarize_thread", tenant: t.tenant, thread_id: threadId, keep_messages: 1 })));
    const waiting = () => runInDurableObject(stub, (o: ThreadDO) => o.leases.waiting);
    while ((await waiting()) < 1) await new Promise((r) => setTimeout(r, 5));
    const later = thread.appendMessages([{ role: "user", content: "after the summary" }], "update");
    while ((await waiting()) < 2) await new Promise((r) => setTimeout(r, 5));
    await runInDurableObject(stub, (o: ThreadDO) => o.leases.release(holder.token));
    expect(await summarizing).toBe("done");
    await later;
    const msgs = (await thread.getState()).channels.messages.map((m) => String(m.content));
    expect(msgs).toHaveLength(3);
    expect(msgs[0]).toMatch(/^\[Summary of the earlier conversation/);
    expect(msgs.slice(1)).toEqual(["question 2", "after the summary"]);
  });

  it("a thread already short enough is left alone", async () => {
    const threadId = `sum-${uid()}`;
    const thread = new ThreadClient(env, t.tenant, threadId);
    await thread.appendMessages(
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
      ],
      "input",
    );
    expect(await consumeTask(ctx, new FakeMessage(task({ kind: "summarize_thread", tenant: t.tenant, thread_id: threadId, keep_messages: 6 })))).toBe("done");
    expect((await thread.getState()).channels.messages).toHaveLength(2);
  });
});
