import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { BOOKMARK_HEADER, parseBookmark } from "../memory/bookmark";
import { runAnyTurn } from "../pipeline/run-in-object";
import { routingOf, type TraceLevel, type TurnInput, type TurnResult } from "../pipeline/turn";
import { routeHeaders } from "../routing/route-headers";
import { access } from "./access";
import type { AppEnv } from "./app-env";
import { RUN_ERRORS, streamErrorBody } from "./chat";
import { InvokeRequest, InvokeResponse, TraceHeader } from "./chat-schemas";
import { errorResponses, jsonOrEventStream } from "./openapi-errors";
import { streamRun } from "./stream-run";
import { validationHook } from "./validation";

const invokeTurn = createRoute({
  method: "post",
  path: "/v1/invoke",
  middleware: access("run", "run", { idempotent: true }),
  tags: ["chat"],
  summary: "Run an agent turn (native shape)",
  request: { headers: TraceHeader, body: { content: { "application/json": { schema: InvokeRequest } }, required: true } },
  responses: {
    200: jsonOrEventStream(
      InvokeResponse,
      "The reply with routing and usage; with stream: true, SSE events `delta`, then `done` (the same summary) or `error`",
    ),
    ...errorResponses(...RUN_ERRORS),
  },
});

function summary(r: TurnResult, trace: TraceLevel) {
  return {
    session_id: r.threadId ?? "",
    checkpoint_id: r.checkpointId,
    message: { role: "assistant" as const, content: r.reply.content, ...(r.reply.tool_calls ? { tool_calls: r.reply.tool_calls } : {}) },
    model: r.model.name,
    routing: routingOf(r, trace),
    usage: { prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens, cost: r.usage.cost, estimated: r.usage.estimated },
    ...(r.warnings.length > 0 ? { warnings: r.warnings } : {}),
    memory: r.memory,
  };
}

/** POST /v1/invoke: the seed's native request shape; always stateful (session_id is the thread). */
export const invokeRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(invokeTurn, async (c) => {
  const body = c.req.valid("json");
  const trace = body.trace ?? c.req.valid("header")["x-edgeweave-trace"] ?? "summary";
  const input: TurnInput = {
    principal: c.get("principal"),
    timings: c.get("timings"),
    bookmark: parseBookmark(c.req.header(BOOKMARK_HEADER)),
    agentName: body.agent_name,
    threadId: body.session_id,
    messages: [{ role: "user", content: body.content }],
    model: body.model_override,
    capabilities: body.metadata?.capabilities,
    memoryScopes: body.metadata?.memory_scopes,
    checkpointId: body.checkpoint_id,
    context: body.context,
  };
  const deps = { env: c.env, waitUntil: (p: Promise<unknown>) => c.executionCtx.waitUntil(p) };
  if (!body.stream) {
    const r = await runAnyTurn(deps, input);
    return c.json(summary(r, trace), 200, { ...routeHeaders({ model: r.model, reason: r.route.reason }), "Server-Timing": r.timings.header() });
  }
  return streamRun(deps, input, {
    async start() {},
    async delta(out, ev) {
      if (ev.content !== undefined) await out.send(JSON.stringify({ content: ev.content }), "delta");
    },
    done: (out, r) => out.send(JSON.stringify(summary(r, trace)), "done"),
    error: (out, e) => out.send(JSON.stringify(streamErrorBody(e)), "error"),
  });
});
