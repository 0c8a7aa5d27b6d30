import { app } from "./http/app";
import { consumeTaskBatch } from "./tasks/consumer";
import { consumeDeadLetterBatch, DEAD_LETTER_QUEUE } from "./tasks/dead-letter-queue";
import { rememberEnvSecrets } from "./log";

export { ThreadDO } from "./thread/thread-do";
export type { App } from "./http/app";

export default {
  fetch: app.fetch,
  queue: (batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext) => {
    rememberEnvSecrets(env);
    return batch.queue === DEAD_LETTER_QUEUE ? consumeDeadLetterBatch(batch, env) : consumeTaskBatch(batch, env, ctx);
  },
} satisfies ExportedHandler<Env>;
