import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import type { Principal } from "../core/principal";
import type { TurnInput } from "../pipeline/turn";
import type { Timings } from "../pipeline/timings";
import type { Message } from "../core/message";
import { requireKnownModel } from "../routing/closest-models";
import { CheckpointId } from "../thread/types";
import { LangChainMessage, toInput } from "./messages";
import { notServed, refuseUnserved, Unserved } from "./served";

/**
 * A run request of LangGraph's API (the SDK's runs.stream / wait / create body) and the turn it is:
 * the input's messages are the turn's new messages, `context` (and `config.configurable`'s own keys)
 * the run's context, `checkpoint` / `checkpoint_id` the checkpoint a branch starts from.
 */
export const STREAM_MODES = ["values", "updates", "messages", "messages-tuple", "custom"] as const;
export type StreamMode = (typeof STREAM_MODES)[number];
const ANY_MODE = z.enum([...STREAM_MODES, "events", "debug", "tasks", "checkpoints", "tools"]);
/** LangGraph's `stream_mode`: one mode or a list (runs and join streams). */
export const StreamModes = z.union([ANY_MODE, z.array(ANY_MODE).max(10)]);

const CheckpointRef = z.object({ checkpoint_id: CheckpointId.nullish() }).loose();

/** Agent Chat UI's decision on one action request (LangChain's human-in-the-loop middleware shape). */
const Decision = z.discriminatedUnion("type", [
  z.object({ type: z.literal("approve") }),
  z.object({ type: z.literal("edit"), edited_action: z.object({ name: z.string().min(1).max(128), args: z.record(z.string(), z.unknown()) }) }),
  z.object({ type: z.literal("reject"), message: z.string().max(10_000).optional() }),
]);

export const RunBody = z
  .object({
    assistant_id: z.string().min(1).max(128),
    input: z
      .object({ messages: z.union([LangChainMessage, z.array(LangChainMessage).max(1000)]).optional() })
      .catchall(z.unknown())
      .nullish(),
    command: z
      .object({ resume: z.object({ decisions: z.array(Decision).min(1).max(64) }).optional(), update: Unserved, goto: Unserved })
      .nullish()
      .openapi({ description: "`resume: {decisions: [...]}` answers the calls an agent's human_in_the_loop stopped at" }),
    config: z
      .object({
        configurable: z.record(z.string().max(128), z.unknown()).optional(),
        tags: Unserved,
        recursion_limit: Unserved,
      })
      .nullish(),
    context: z.record(z.string().max(128), z.unknown()).nullish(),
    metadata: Unserved,
    stream_mode: StreamModes.nullish(),
    stream_subgraphs: z.boolean().nullish().openapi({ description: "Accepted: an agent has no subgraphs, so there is nothing more to stream" }),
    stream_resumable: z.boolean().nullish(),
    checkpoint: CheckpointRef.nullish(),
    checkpoint_id: CheckpointId.nullish(),
    multitask_strategy: z.enum(["reject", "enqueue", "interrupt", "rollback"]).nullish(),
    on_disconnect: z.enum(["cancel", "continue"]).nullish().openapi({
      description: "continue (the default): the run goes on to its end and is saved when its client goes; cancel: it is cancelled, saving nothing",
    }),
    on_completion: z.enum(["delete", "keep"]).nullish(),
    if_not_exists: z.enum(["create", "reject"]).nullish(),
    interrupt_before: Unserved,
    interrupt_after: Unserved,
    webhook: Unserved,
    after_seconds: Unserved,
    feedback_keys: Unserved,
    checkpoint_during: Unserved,
    durability: Unserved,
    strict_resume: Unserved,
    langsmith_tracer: Unserved,
  })
  .openapi("LangGraphRunRequest");
export type RunBody = z.infer<typeof RunBody>;

/** Refuses what a run of edgeweave's does not do, naming it; the stream modes asked for (default values). */
export function checkRunBody(body: RunBody): StreamMode[] {
  refuseUnserved(body.command ?? {}, {
    update: "update the state with POST /threads/{id}/state, then run",
    goto: "an agent has no graph nodes to go to",
  });
  refuseUnserved(body, {
    metadata:
      "a run keeps no metadata of its own: put it on the thread (metadata of POST /threads or PATCH /threads/{id}); budgets on metadata values are not read from either, so cap LangGraph runs with a key or thread budget",
    interrupt_before: "an agent has no graph nodes to stop at",
    interrupt_after: "an agent has no graph nodes to stop at",
    webhook: "register a webhook with POST /v1/webhooks",
    after_seconds: "start the run when it is due",
    feedback_keys: "LangSmith feedback is not served",
    checkpoint_during: "a run saves one checkpoint per step, at its end",
    durability: "a run saves one checkpoint per step, at its end",
    strict_resume: "a resume is always checked against the calls that wait (400 when none does)",
    langsmith_tracer: "LangSmith tracing is not served; the routing trace is in X-Edgeweave-Route",
  });
  refuseUnserved(body.config ?? {}, {
    tags: "LangSmith tracing is not served; the routing trace is in X-Edgeweave-Route",
    recursion_limit: "a run makes at most 8 model calls (steps), as every edgeweave run",
  });
  return servedModes(body.stream_mode ?? "values");
}

/** The stream modes served, distinct; a mode not served is refused by name. */
export function servedModes(asked: z.infer<typeof StreamModes>): StreamMode[] {
  const modes = [asked].flat();
  for (const m of modes)
    if (!(STREAM_MODES as readonly string[]).includes(m)) notServed(`stream_mode ${m}`, `the stream modes served are ${STREAM_MODES.join(", ")}`);
  return [...new Set(modes)] as StreamMode[];
}

/**
 * configurable keys LangGraph itself reads; `model` picks the model (as chat's `model`); the others are the
 * run's context, as a graph's configurable is.
 */
const LANGGRAPH_KEYS = new Set(["thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "assistant_id", "graph_id", "run_id", "user_id"]);

/** The run's turn: new messages with ids (so the stream's values name them as the thread will), context, branch point. */
export function turnOf(
  body: RunBody,
  edge: { principal: Principal; timings: Timings; agentName: string; threadId: string | undefined; runId: string },
): { turn: TurnInput; input: Omit<Message, "created_at">[] } {
  const resume = body.command?.resume;
  if (resume) {
    if (body.input?.messages !== undefined) throw new AppError("BEM-011", "send input or command.resume, not both");
    if (edge.threadId === undefined) throw new AppError("BEM-011", "command.resume: a run without a thread has nothing to resume");
  }
  const raw = body.input?.messages;
  const others = Object.keys(body.input ?? {}).filter((k) => k !== "messages");
  if (others.length > 0) notServed(`input.${others[0]}`, "an agent's input is its messages ({messages: [...]})");
  const messages = (raw === undefined ? [] : [raw].flat()).map((m) => ({ ...toInput(m), id: m.id ?? crypto.randomUUID() }));
  if (messages.length === 0 && !resume) throw new AppError("BEM-011", "input.messages: send at least one message for the agent to answer");
  const { model, ...rest } = body.config?.configurable ?? {};
  if (model !== undefined && typeof model !== "string") throw new AppError("BEM-011", "config.configurable.model: a model name (or auto)");
  if (model !== undefined) requireKnownModel(model, "edgeweave");
  const configurable = Object.fromEntries(Object.entries(rest).filter(([k]) => !LANGGRAPH_KEYS.has(k) && !k.startsWith("__")));
  const context = { ...configurable, ...(body.context ?? {}) };
  const checkpointId = body.checkpoint_id ?? body.checkpoint?.checkpoint_id ?? body.config?.configurable?.checkpoint_id;
  if (checkpointId !== undefined && checkpointId !== null && typeof checkpointId !== "string")
    throw new AppError("BEM-011", "config.configurable.checkpoint_id: a checkpoint id is a string");
  if (checkpointId && edge.threadId === undefined) throw new AppError("BEM-011", "checkpoint: a run without a thread has no checkpoints to branch from");
  const turn: TurnInput = {
    principal: edge.principal,
    timings: edge.timings,
    agentName: edge.agentName,
    ...(edge.threadId !== undefined ? { threadId: edge.threadId, cancelKey: edge.runId } : {}),
    messages,
    ...(resume ? { resume: { decisions: resume.decisions } } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(Object.keys(context).length > 0 ? { context } : {}),
    ...(checkpointId ? { checkpointId } : {}),
  };
  return { turn, input: messages };
}
