import { app } from "./http/app";
import { consumeTaskBatch } from "./tasks/consumer";

export { ThreadDO } from "./thread/thread-do";
export type { App } from "./http/app";

export default {
  fetch: app.fetch,
  queue: (batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext) => consumeTaskBatch(batch, env, ctx),
} satisfies ExportedHandler<Env>;
