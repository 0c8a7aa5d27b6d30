import { app } from "./http/app";

export { ThreadDO } from "./thread/thread-do";
export type { App } from "./http/app";

export default {
  fetch: app.fetch,
  async queue(batch: MessageBatch<unknown>): Promise<void> {
    // Replaced by the task consumer (src/tasks).
    for (const m of batch.messages) m.ack();
  },
} satisfies ExportedHandler<Env>;
