import { memoryFor } from "../memory/for-tenant";
import { assertRoom } from "../quotas";
import { MemoryScope } from "../memory/scope";
import { runWebhookDelivery } from "../webhooks/run-delivery";
import { extractFacts } from "./extract-facts";
import type { Task } from "./messages";
import { summarizeThread } from "./summarize-thread";

export type TaskContext = { env: Env; waitUntil: (p: Promise<unknown>) => void };

/** Runs one validated task; the returned value is stored in tasks_done. Throws to retry. */
export async function runTask(ctx: TaskContext, task: Task): Promise<unknown> {
  const { env } = ctx;
  switch (task.kind) {
    case "remember_memory": {
      await assertRoom(env, task.tenant, "facts"); // 413: a permanent failure, dead-lettered with the reason
      const id = await memoryFor(env, task.tenant).remember(MemoryScope.parse(task.scope), task.fact_kind, task.text);
      return { fact_id: id };
    }
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
