import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { isAppError } from "../core/errors";
import { BOOKMARK_HEADER, parseBookmark } from "../memory/bookmark";
import type { ReconcileReport } from "../pipeline/reconcile";
import { runAnyTurn } from "../pipeline/run-in-object";
import { routingOf, type TraceLevel, type TurnInput, type TurnResult } from "../pipeline/turn";
import { isFailoverError } from "../providers/failover";
import type { DeltaEvent } from "../providers/types";
import { routeHeaders } from "../routing/route-headers";
import { requireKnownModel } from "../routing/closest-models";
import type { ParsedMessageInput } from "../core/message";
import { access } from "./access";
import type { AppEnv } from "./app-env";
import { ChatCompletionRequest, ChatCompletionResponse, TraceHeader } from "./chat-schemas";
import { errorResponses, jsonOrEventStream } from "./openapi-errors";
import { streamRun } from "./stream-run";
import { validationHook } from "./validation";
import { errorText, log } from "../core/log";

export const RUN_ERRORS = [
  "BEM-160",
  "BEM-022",
  "BEM-023",
  "BEM-030",
  "BEM-032",
  "BEM-038",
  "BEM-041",
  "BEM-046",
  "BEM-047",
  "BEM-065",
  "BEM-070",
  "BEM-071",
  "BEM-072",
  "BEM-073",
  "BEM-074",
  "BEM-075",
  "BEM-076",
  "BEM-077",
  "BEM-081",
  "BEM-083",
  "BEM-084",
] as const;

const chatCompletion = createRoute({
  method: "post",
  path: "/v1/chat/completions",
  middleware: access("run", "run", { idempotent: true }),
  tags: ["chat"],
  summary: "Chat completion (OpenAI-compatible; stateful with thread_id)",
  request: {
    headers: TraceHeader.extend({ "x-thread-id": z.string().optional().openapi({ description: "Alternative to the body's thread_id" }) }),
    body: { content: { "application/json": { schema: ChatCompletionRequest } }, required: true },
  },
  responses: {
    200: jsonOrEventStream(ChatCompletionResponse, "A chat.completion; with stream: true, SSE chat.completion.chunk events ending in data: [DONE]"),
    ...errorResponses(...RUN_ERRORS, "BEM-105", "BEM-109"),
  },
});

const completionId = () => `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

export function edgeweaveSummary(r: TurnResult, trace: TraceLevel, reconciled: ReconcileReport | null = null) {
  return {
    thread_id: r.threadId,
    checkpoint_id: r.checkpointId,
    routing: routingOf(r, trace),
    cost: r.usage.cost,
    usage_estimated: r.usage.estimated,
    warnings: r.warnings,
    memory: r.memory,
    ...(reconciled ? { reconciled } : {}),
  };
}

/** The public body of a run that failed mid-stream (OpenAI clients read `error.message`). */
export function streamErrorBody(e: unknown) {
  if (isAppError(e)) {
    // The client sees the code; what the upstream said (redacted) goes to the log only.
    if (e.internal) log.error("stream", { code: e.code, internal: e.internal });
    return { error: { code: e.code, message: e.message, ...(isFailoverError(e) ? { attempts: e.attempts } : {}) } };
  }
  log.error("stream", { message: errorText(e) });
  return { error: { code: "BEM-001", message: "Internal error" } };
}

function toolCallDeltas(ev: DeltaEvent) {
  return ev.tool_calls?.map((t) => ({
    index: t.index,
    ...(t.id ? { id: t.id, type: "function" } : {}),
    function: { ...(t.name ? { name: t.name } : {}), arguments: t.arguments ?? "" },
  }));
}

/** POST /v1/chat/completions: OpenAI-compatible, so the official clients work unchanged. */
export const chatRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(chatCompletion, async (c) => {
  const body = c.req.valid("json");
  requireKnownModel(body.model);
  const headers = c.req.valid("header");
  const trace = body.trace ?? headers["x-edgeweave-trace"] ?? "summary";
  const maxOutput = body.max_completion_tokens ?? body.max_tokens;
  const asSent: TurnInput = {
    principal: c.get("principal"),
    timings: c.get("timings"),
    bookmark: parseBookmark(c.req.header(BOOKMARK_HEADER)),
    agentName: body.agent,
    threadId: body.thread_id ?? headers["x-thread-id"],
    messages: body.messages.map(
      (m): ParsedMessageInput => ({
        role: m.role === "developer" ? "system" : m.role,
        content: m.content ?? null,
        ...(m.name !== undefined ? { name: m.name } : {}),
        ...(m.tool_calls !== undefined ? { tool_calls: m.tool_calls } : {}),
        ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
      }),
    ),
    model: body.model,
    capabilities: body.capabilities,
    memoryScopes: body.memory_scopes,
    checkpointId: body.checkpoint_id,
    context: body.context,
    params: {
      ...(body.tools ? { tools: body.tools } : {}),
      ...(body.tool_choice ? { tool_choice: body.tool_choice } : {}),
      ...(body.parallel_tool_calls !== undefined ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
      ...(body.response_format ? { response_format: body.response_format } : {}),
      ...(body.temperature != null ? { temperature: body.temperature } : {}),
      ...(body.top_p != null ? { top_p: body.top_p } : {}),
      ...(maxOutput != null ? { max_output_tokens: maxOutput } : {}),
      ...(body.stop != null ? { stop: body.stop } : {}),
      ...(body.user ? { user: body.user } : {}),
    },
  };
  const deps = { env: c.env, waitUntil: (p: Promise<unknown>) => c.executionCtx.waitUntil(p) };
  // Clients that resend the whole history store only what is new (README "Resent history"): decided in the thread's object.
  const input: TurnInput = { ...asSent, resent: true };

  if (!body.stream) {
    const r = await runAnyTurn(deps, input);
    const id = completionId();
    return c.json(
      {
        id,
        object: "chat.completion" as const,
        created: nowSeconds(),
        model: r.model.name,
        choices: [
          {
            index: 0,
            message: { role: "assistant" as const, content: r.reply.content, ...(r.reply.tool_calls ? { tool_calls: r.reply.tool_calls } : {}), refusal: null },
            finish_reason: r.finishReason,
            logprobs: null,
          },
        ],
        usage: { prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens, total_tokens: r.usage.total_tokens },
        edgeweave: edgeweaveSummary(r, trace, r.reconciled ?? null),
      },
      200,
      { ...routeHeaders({ model: r.model, reason: r.route.reason }), "Server-Timing": r.timings.header() },
    );
  }

  const id = completionId();
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = (model: string, delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created: nowSeconds(),
      model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      ...extra,
    });
  let model = body.model;
  return streamRun(deps, input, {
    async start(out, m) {
      model = m.name;
      await out.send(chunk(model, { role: "assistant", content: "" }, null));
    },
    async delta(out, ev) {
      const d: Record<string, unknown> = {};
      if (ev.content !== undefined) d.content = ev.content;
      const calls = toolCallDeltas(ev);
      if (calls) d.tool_calls = calls;
      await out.send(chunk(model, d, null));
    },
    async done(out, r) {
      // The finishing chunk names the model and why (and the checkpoint), with or without include_usage.
      await out.send(chunk(r.model.name, {}, r.finishReason, { edgeweave: edgeweaveSummary(r, trace, r.reconciled ?? null) }));
      if (includeUsage) {
        await out.send(
          JSON.stringify({
            id,
            object: "chat.completion.chunk",
            created: nowSeconds(),
            model: r.model.name,
            choices: [],
            usage: { prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens, total_tokens: r.usage.total_tokens },
            edgeweave: edgeweaveSummary(r, trace, r.reconciled ?? null),
          }),
        );
      }
      await out.send("[DONE]");
    },
    // Cut after output began: an error event and never [DONE]; nothing was saved.
    error: (out, e) => out.send(JSON.stringify(streamErrorBody(e))),
  });
});
