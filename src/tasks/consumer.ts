import { isAppError } from "../core/errors";
import { failWebhookDelivery } from "./run-webhook";
import { runTask, type TaskContext } from "./handlers";
import { Task } from "../queue/messages";
import { isTaskDone, markTaskDone, recordDeadLetter } from "./store";
import { describeIssues } from "../core/zod-issues";
import { backoff } from "../core/backoff";
import { errorText, log } from "../core/log";

/** A task that has failed this many deliveries is dead-lettered (below the queue's own max_retries of 5). */
export const MAX_ATTEMPTS = 5;

/** Seconds before the next delivery: 10, 20, 40, 80… capped at 5 minutes, less up to 20% (jitter). */
export const retryDelaySeconds = (attempts: number, random?: () => number): number => backoff(attempts - 1, { base: 10, max: 300, random });

/** What the consumer needs of a queue message (a real Message, or a test's stand-in). */
export type TaskMessage = Pick<Message<unknown>, "id" | "body" | "attempts" | "ack" | "retry">;

/** A coded client-side error (bad scope, unknown fact, forbidden…) will fail the same way again. */
const isPermanent = (e: unknown): boolean => isAppError(e) && e.status < 500 && e.status !== 429;

/** The reason kept with a dead letter: public codes and messages only; internal details go to the log. */
function reasonOf(e: unknown): string {
  if (isAppError(e)) return `${e.code}: ${e.message}`;
  if (e instanceof Error && e.name === "CallbackFailed") return e.message;
  return "internal error (details in the worker log)";
}

const bodyText = (body: unknown): string => {
  try {
    return typeof body === "string" ? body : (JSON.stringify(body) ?? String(body));
  } catch {
    return String(body);
  }
};

/** Best-effort tenant of a malformed body, so its owner can see the dead letter. */
const tenantOf = (body: unknown): string =>
  typeof body === "object" && body !== null && typeof (body as { tenant?: unknown }).tenant === "string"
    ? (body as { tenant: string }).tenant.slice(0, 64)
    : "";

/**
 * Processes one delivery of one message. Never throws: every outcome is an ack
 * (done, already done, dead-lettered) or a retry with backoff.
 */
export async function consumeTask(ctx: TaskContext, msg: TaskMessage): Promise<"done" | "duplicate" | "retried" | "dead-lettered"> {
  const { env } = ctx;
  const parsed = Task.safeParse(msg.body);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error.issues, { root: "(body)", limit: 3, input: msg.body });
    try {
      await recordDeadLetter(env.DB, {
        tenant: tenantOf(msg.body),
        taskId: null,
        kind: null,
        body: bodyText(msg.body),
        reason: `malformed task: ${issues}`,
        attempts: msg.attempts,
      });
    } catch {
      msg.retry({ delaySeconds: retryDelaySeconds(msg.attempts) });
      return "retried";
    }
    msg.ack();
    return "dead-lettered";
  }
  const task = parsed.data;
  try {
    if (await isTaskDone(env.DB, task.id)) {
      msg.ack();
      return "duplicate";
    }
    const result = await runTask(ctx, task);
    await markTaskDone(env.DB, task, result);
    msg.ack();
    return "done";
  } catch (e) {
    if (!isAppError(e) || e.status >= 500 || e.status === 424) {
      log.error("task", { task: task.id, kind: task.kind, attempt: msg.attempts, error: errorText(e), internal: isAppError(e) ? e.internal : undefined });
    }
    if (!isPermanent(e) && msg.attempts < MAX_ATTEMPTS) {
      msg.retry({ delaySeconds: retryDelaySeconds(msg.attempts) });
      return "retried";
    }
    const reason = `${isPermanent(e) ? "permanent failure" : `failed ${msg.attempts} attempts`}: ${reasonOf(e)}`;
    try {
      await recordDeadLetter(env.DB, { tenant: task.tenant, taskId: task.id, kind: task.kind, body: bodyText(task), reason, attempts: msg.attempts });
      if (task.kind === "run_webhook") await failWebhookDelivery(env, task, reason);
    } catch (storeErr) {
      // Could not keep the dead letter (D1 down?): let the queue retry, and its own DLQ catch it in the end.
      log.error("dead-letter", { task: task.id, error: errorText(storeErr) });
      msg.retry({ delaySeconds: retryDelaySeconds(msg.attempts) });
      return "retried";
    }
    msg.ack();
    return "dead-lettered";
  }
}

/** The queue() entry point: messages of a batch are independent and run concurrently. */
export async function consumeTaskBatch(batch: Pick<MessageBatch<unknown>, "messages">, env: Env, ctx: Pick<ExecutionContext, "waitUntil">): Promise<void> {
  const taskCtx: TaskContext = { env, waitUntil: (p) => ctx.waitUntil(p) };
  await Promise.all(batch.messages.map((m) => consumeTask(taskCtx, m)));
}
