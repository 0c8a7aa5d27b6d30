import type { Principal } from "../core/principal";
import { dispatchTurn } from "../pipeline/dispatch-turn";
import type { RunWebhookTask } from "../queue/messages";
import type { z } from "@hono/zod-openapi";
import { allowPrivateCallbacks, callbackUrlProblem } from "../webhooks/callback-url";
import { type CallbackOptions, type CallbackOutcome, sendCallback } from "../webhooks/callback";
import { findWebhook, getDelivery, setDeliveryStatus, type WebhookRecord } from "../webhooks/store";

/** A webhook principal's keyId is this prefix and the hook's id. */
export const WEBHOOK_KEY_PREFIX = "webhook:";

/**
 * A hook runs as the webhook principal of its tenant with the grants given at
 * registration (never more than the registering key had): the policy decides its
 * threads, its agent's scopes and whether it may rewrite history, as for a key.
 */
export function webhookPrincipal(hook: Pick<WebhookRecord, "id" | "tenant_id" | "scopes" | "rewrite_history" | "write_facts">): Principal {
  return {
    kind: "webhook",
    tenant: hook.tenant_id,
    role: "webhook",
    keyId: `${WEBHOOK_KEY_PREFIX}${hook.id}`,
    grants: hook.scopes,
    rewriteHistory: hook.rewrite_history,
    writeFacts: hook.write_facts,
  };
}

export type RunSummary = { thread_id: string; checkpoint_id: string | null; reply: string; model: string };
export type DeliveryResult = RunSummary & { callback?: CallbackOutcome | { status: "refused"; reason: string } };

/**
 * The run_webhook task: run the turn once (the delivery row's status records it,
 * so a redelivered task never runs it twice), then POST the callback if any.
 */
export async function runWebhookDelivery(
  env: Env,
  waitUntil: (p: Promise<unknown>) => void,
  task: z.infer<typeof RunWebhookTask>,
  callbackOpts: CallbackOptions = {},
): Promise<DeliveryResult | { skipped: string }> {
  const hook = await findWebhook(env.DB, task.webhook_id);
  if (!hook || hook.tenant_id !== task.tenant) return { skipped: "webhook was deleted" };
  const delivery = await getDelivery(env.DB, hook.tenant_id, hook.id, task.delivery_id);
  if (!delivery) return { skipped: "delivery record is gone" };
  if (delivery.status === "done" || delivery.status === "failed") return JSON.parse(delivery.result ?? "null") as DeliveryResult;

  let summary: RunSummary;
  if (delivery.status === "accepted") {
    // In the thread's object, like every stateful turn: facts as fresh as the thread's previous turn, no quota read on an existing thread.
    const r = await dispatchTurn(
      { env, waitUntil },
      {
        principal: webhookPrincipal(hook),
        agentName: hook.agent_name,
        threadId: delivery.thread_id,
        messages: [{ role: "user", content: delivery.input }],
        cause: "webhook",
      },
    );
    summary = {
      thread_id: delivery.thread_id,
      checkpoint_id: r.checkpointId,
      reply: typeof r.reply.content === "string" ? r.reply.content : "",
      model: r.model.name,
    };
    await setDeliveryStatus(env.DB, hook.tenant_id, hook.id, delivery.delivery_id, hook.callback_url ? "replied" : "done", summary);
  } else {
    summary = JSON.parse(delivery.result ?? "null") as RunSummary;
  }
  if (!hook.callback_url) return summary;

  // Checked again before sending: the rules (or ALLOW_PRIVATE_CALLBACKS) may have changed since registration.
  const problem = callbackUrlProblem(hook.callback_url, allowPrivateCallbacks(env));
  const callback = problem
    ? { status: "refused" as const, reason: `callback_url ${problem}` }
    : await sendCallback(
        hook.callback_url,
        hook.secret,
        { webhook_id: hook.id, delivery_id: delivery.delivery_id, thread_id: summary.thread_id, reply: summary.reply, model: summary.model },
        callbackOpts,
      );
  const result: DeliveryResult = { ...summary, callback };
  await setDeliveryStatus(env.DB, hook.tenant_id, hook.id, delivery.delivery_id, "done", result);
  return result;
}

/** Called when a run_webhook task is dead-lettered: the delivery is marked failed with the reason. */
export async function failWebhookDelivery(env: Env, task: z.infer<typeof RunWebhookTask>, reason: string): Promise<void> {
  const hook = await findWebhook(env.DB, task.webhook_id);
  if (!hook || hook.tenant_id !== task.tenant) return;
  const delivery = await getDelivery(env.DB, hook.tenant_id, hook.id, task.delivery_id);
  if (!delivery || delivery.status === "done") return;
  const prior = delivery.result ? (JSON.parse(delivery.result) as object) : {};
  await setDeliveryStatus(env.DB, hook.tenant_id, hook.id, delivery.delivery_id, "failed", { ...prior, error: reason });
}
