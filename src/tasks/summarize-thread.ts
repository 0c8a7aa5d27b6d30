import type { z } from "@hono/zod-openapi";
import { unwrap } from "../core/wire-error";
import { parseThreadId, threadStub } from "../thread/thread-id";
import type { SummarizeThreadTask } from "../queue/messages";

/** The summarize_thread task: it runs in the thread's object like a turn, holding the thread from its read to its save (object/summarize.ts). */
export async function summarizeThread(env: Env, task: z.infer<typeof SummarizeThreadTask>): Promise<{ summarized: number }> {
  return unwrap(await threadStub(env, task.tenant, parseThreadId(task.thread_id)).summarize(task));
}
