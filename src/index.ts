import { app } from "./http/app";
import { spendGuard } from "./pipeline/spend-guard";
import { scheduledPurge } from "./memory/purge";
import { purgeExpiredItems } from "./langgraph/store";
import { purgeBookkeepingSends } from "./object/bookkeeping-flush";
import { consumeTaskBatch } from "./tasks/consumer";
import { consumeDeadLetterBatch, DEAD_LETTER_QUEUE } from "./tasks/dead-letter-queue";
import { purgeDeliveries } from "./webhooks/store";
import { purgeTaskRecords } from "./tasks/store";
import { rememberEnvSecrets } from "./core/log";
import { purgeExpiredThreads } from "./thread/purge-expired";
import { knowAssets } from "./embed/embedded";
import { knowEmbedders } from "./pipeline/run-embed";

// The thread object: its capabilities (src/thread/) and the agent run inside it.
export { ThreadDO } from "./object/thread-object";
// One spend budget's counter.
export { BudgetDO } from "./budgets/budget-object";
export type { App } from "./http/app";

export default {
  fetch: app.fetch,
  queue: (batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext) => {
    rememberEnvSecrets(env);
    knowAssets(env.ASSETS);
    knowEmbedders(env);
    return batch.queue === DEAD_LETTER_QUEUE ? consumeDeadLetterBatch(batch, env) : consumeTaskBatch(batch, env, ctx);
  },
  scheduled: (_controller: ScheduledController, env: Env, ctx: ExecutionContext) => {
    rememberEnvSecrets(env);
    knowEmbedders(env);
    ctx.waitUntil(scheduledPurge(env, Date.now(), (tenant) => spendGuard(env, { tenant, keyId: "" }, undefined, (p) => ctx.waitUntil(p))));
    ctx.waitUntil(purgeExpiredItems(env.DB));
    ctx.waitUntil(purgeBookkeepingSends(env.DB));
    ctx.waitUntil(purgeDeliveries(env.DB));
    ctx.waitUntil(purgeTaskRecords(env.DB));
    ctx.waitUntil(purgeExpiredThreads(env));
  },
} satisfies ExportedHandler<Env>;
