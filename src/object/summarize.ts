import type { z } from "@hono/zod-openapi";
import type { Message } from "../core/message";
import { summarization } from "../pipeline/middleware/summarization";
import { HookOutcome } from "../pipeline/middleware/types";
import type { Runtime } from "../pipeline/runtime";
import { toThreadOps } from "../pipeline/state";
import { summarizerFor } from "../pipeline/summarizer";
import { routerFor } from "../routing/bundled";
import type { SummarizeThreadTask } from "../queue/messages";
import type { UpdateOp } from "../thread/types";

/**
 * The summarize_thread task's summary of a thread's messages: the shipped summarization middleware, run once
 * outside a turn, its summarizer's usage recorded as "summarize_task". The ops replace the older messages with
 * the summary (one checkpoint, so the one before still holds the whole conversation); none when it is short enough.
 */
export async function summaryOf(env: Env, task: z.infer<typeof SummarizeThreadTask>, messages: Message[]): Promise<{ ops: UpdateOp[]; summarized: number }> {
  const route = routerFor(env).resolve({ content: null, messages: [], ...(task.model ? { model_override: task.model } : {}) });
  const runtime: Runtime = {
    model: { name: route.model.name, max_tokens: route.model.max_tokens },
    context: {},
    agent: { name: "summarize_thread" },
    now: Date.now,
    summarize: summarizerFor({ env }, { tenant: task.tenant, keyId: "" }, "summarize_task", task.thread_id),
  };
  const mw = summarization({
    trigger: { messages: task.keep_messages + 1 },
    keep: { messages: task.keep_messages },
    ...(task.model ? { model: task.model } : {}),
  });
  const out = await mw.beforeModel?.({ messages }, runtime);
  if (out instanceof HookOutcome) {
    // The middleware is fail-safe (it leaves the thread alone); a task should be retried instead.
    if (out.events.length > 0) throw new Error(out.events.map((e) => e.message).join("; "));
    return { ops: [], summarized: 0 };
  }
  const ops = out ? toThreadOps(out) : [];
  if (!out || ops.length === 0) return { ops: [], summarized: 0 };
  const kept = out.messages && "op" in out.messages && out.messages.op === "overwrite" ? out.messages.messages.length - 1 : messages.length;
  return { ops, summarized: messages.length - kept };
}
