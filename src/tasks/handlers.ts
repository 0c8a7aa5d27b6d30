import { assertFactRoom, factQuotaOf } from "../auth/quotas";
import { AppError } from "../core/errors";
import { D1FactsBackend } from "../memory/d1-facts-backend";
import { validateFactText, validateKey, validateKind } from "../memory/facts";
import { memoryFor } from "../memory/for-tenant";
import { MemoryScope } from "../memory/scope";
import { runWebhookDelivery } from "./run-webhook";
import { extractFacts } from "./extract-facts";
import type { Task } from "../queue/messages";
import { summarizeThread } from "./summarize-thread";

export type TaskContext = { env: Env; waitUntil: (p: Promise<unknown>) => void };

/**
 * A queued remember, as POST /v1/memory/facts writes it (key, expiry). Its 4xx are permanent failures,
 * dead-lettered with the reason: no room (413), or an expiry that passed while the task waited — written
 * anyway it would be an expired fact, and under a key it would replace the live one with nothing.
 */
async function rememberQueued(env: Env, task: Extract<Task, { kind: "remember_memory" }>) {
  const scope = MemoryScope.parse(task.scope);
  const key = task.key !== undefined ? validateKey(task.key) : null;
  const now = Date.now();
  if (task.expires_at !== undefined && task.expires_at <= now) throw new AppError("BEM-141", "The fact's expiry passed before the task ran; nothing stored");
  const facts = new D1FactsBackend(env.DB, task.tenant);
  await assertFactRoom(env, task.tenant, facts, scope, key);
  const fact = await facts.remember(scope, validateKind(task.fact_kind), validateFactText(task.text), {
    key,
    expiresAt: task.expires_at ?? null,
    now,
    maxFacts: factQuotaOf(env, task.tenant),
    writtenBy: task.written_by ?? "unknown",
  });
  return { fact_id: fact.id, replaced: fact.replaced, existing: fact.existing };
}

/** Runs one validated task; the returned value is stored in tasks_done. Throws to retry. */
export async function runTask(ctx: TaskContext, task: Task): Promise<unknown> {
  const { env } = ctx;
  switch (task.kind) {
    case "remember_memory":
      return rememberQueued(env, task);
    case "forget_memory":
      // Forgetting what is already gone is success: the task's effect holds.
      return { fact_id: task.fact_id, deleted: await memoryFor(env, task.tenant).forget(task.fact_id) };
    case "summarize_thread":
      return summarizeThread(env, task);
    case "run_webhook":
      return runWebhookDelivery(env, ctx.waitUntil, task);
    case "extract_facts":
      return extractFacts(env, task);
  }
}
