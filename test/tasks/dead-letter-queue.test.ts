import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { consumeDeadLetterBatch } from "../../src/tasks/dead-letter-queue";
import { listDeadLetters } from "../../src/tasks/store";
import { FakeMessage } from "./fake-message";

describe("the task queue's dead-letter queue", () => {
  it("keeps each message as a dead letter of its tenant, malformed ones under no tenant, and acks them", async () => {
    const tenant = `dlq-${crypto.randomUUID().slice(0, 8)}`;
    const good = new FakeMessage({ id: "task-1", kind: "remember_memory", tenant, scope: "organization:acme", kind_: "x" }, 6);
    const junk = new FakeMessage("not a task", 6);
    await consumeDeadLetterBatch({ messages: [good, junk] as unknown as Message<unknown>[] }, env);
    expect(good.acked).toBe(1);
    expect(junk.acked).toBe(1);
    const mine = await listDeadLetters(env.DB, tenant, 10);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ task_id: "task-1", kind: "remember_memory", attempts: 6 });
    expect(mine[0]!.reason).toContain("dead-letter queue");
    const orphans = await listDeadLetters(env.DB, "", 100);
    expect(orphans.some((d) => d.body === JSON.stringify("not a task"))).toBe(true);
  });

  it("retries a message when D1 cannot take it, rather than losing it", async () => {
    const m = new FakeMessage({ id: "task-2", kind: "forget_memory", tenant: "t" }, 7);
    // Real D1 with the table gone stands in for an outage.
    await env.DB.prepare("ALTER TABLE dead_letters RENAME TO dead_letters_gone").run();
    try {
      await consumeDeadLetterBatch({ messages: [m] as unknown as Message<unknown>[] }, env);
    } finally {
      await env.DB.prepare("ALTER TABLE dead_letters_gone RENAME TO dead_letters").run();
    }
    expect(m.acked).toBe(0);
    expect(m.retries).toEqual([{ delaySeconds: 60 }]);
  });
});
