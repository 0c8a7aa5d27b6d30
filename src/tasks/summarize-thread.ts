import type { z } from "@hono/zod-openapi";
import { summarization } from "../pipeline/middleware/summarization";
import { HookOutcome } from "../pipeline/middleware/types";
import type { Runtime } from "../pipeline/runtime";
import { toThreadOps } from "../pipeline/state";
import { summarizerFor } from "../pipeline/summarizer";
import { routerFor } from "../routing/bundled";
import { ThreadClient, type HeldLease } from "../thread/client";
import type { SummarizeThreadTask } from "./messages";

/**
 * The summarize_thread task: the shipped summarization middleware, run once
 * outside a turn, with the one summarizer (src/pipeline/summarizer.ts; usage
 * recorded as "summarize_task") writing the summary. The result is one checkpoint (source "update"), so the checkpoint
 * before it still holds the full conversation. It holds the thread's run lease
 * from read to write: the summary replaces the messages, so a turn saved in
 * between would otherwise be overwritten.
 */
export async function summarizeThread(env: Env, task: z.infer<typeof SummarizeThreadTask>): Promise<{ summarized: number }> {
  const thread = new ThreadClient(env, task.tenant, task.thread_id);
  const run = await thread.beginRun();
  try {
    return await summarizeHeld(env, task, thread, run);
  } finally {
    await run.end();
  }
}

async function summarizeHeld(env: Env, task: z.infer<typeof SummarizeThreadTask>, thread: ThreadClient, run: HeldLease): Promise<{ summarized: number }> {
  const state = await thread.getState();
  const messages = state.channels.messages;
  const route = routerFor(env).resolve({ content: null, messages: [], ...(task.model ? { model_override: task.model } : {}) });
  const runtime: Runtime = {
    model: { name: route.model.name, max_tokens: route.model.max_tokens },
    context: {},
    agent: { name: "summarize_thread" },
    now: Date.now,
    summarize: summarizerFor({ env }, task, "summarize_task"),
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
    return { summarized: 0 };
  }
  if (!out) return { summarized: 0 };
  const ops = toThreadOps(out);
  if (ops.length === 0) return { summarized: 0 };
  await thread.update({ ops }, "update", { run, endRun: true });
  const kept = out.messages && "op" in out.messages && out.messages.op === "overwrite" ? out.messages.messages.length - 1 : messages.length;
  return { summarized: messages.length - kept };
}
