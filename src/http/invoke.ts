import { createRoute, OpenAPIHono, type z } from "@hono/zod-openapi";
import { budgetTags } from "../budgets/tags";
import { turnSummary, type TraceLevel, type TurnResult } from "../pipeline/turn";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { InvokeRequest, InvokeResponse, TraceHeader } from "../edge/chat-schemas";
import { errorResponses, jsonOrEventStream } from "../edge/openapi-errors";
import { RUN_ERRORS, serveTurn, streamErrorBody, type WireFormat } from "./turn-edge";
import { validationHook } from "../edge/validation";

const invokeTurn = createRoute({
  method: "post",
  path: "/v1/invoke",
  middleware: access("run", "conversation", { idempotent: true }),
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

type Body = z.infer<typeof InvokeRequest>;

/** The native invoke body: the run summary with the reply, under the native names. */
function summary(r: TurnResult, trace: TraceLevel) {
  const { thread_id, checkpoint_id, routing, warnings, memory } = turnSummary(r, { trace });
  return {
    session_id: thread_id ?? "",
    checkpoint_id,
    message: { role: "assistant" as const, content: r.reply.content, ...(r.reply.tool_calls ? { tool_calls: r.reply.tool_calls } : {}) },
    model: r.model.name,
    routing,
    usage: { prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens, cost: r.usage.cost, estimated: r.usage.estimated },
    ...(warnings.length > 0 ? { warnings } : {}),
    memory,
  };
}

/** The native invoke shape as a wire format (src/http/turn-edge.ts). */
const invokeFormat: WireFormat<Body, TraceLevel> = {
  parse: (body, edge) => ({
    turn: {
      ...edge.base(),
      agentName: body.agent_name,
      threadId: body.session_id,
      messages: [{ role: "user", content: body.content }],
      model: body.model_override,
      capabilities: body.metadata?.capabilities,
      memoryScopes: body.metadata?.memory_scopes,
      budgetTags: budgetTags(body.metadata, { own: ["capabilities", "memory_scopes"] }),
      checkpointId: body.checkpoint_id,
      context: body.context,
    },
    stream: body.stream === true,
    plan: edge.trace(body.trace),
  }),
  render: summary,
  stream: (trace) => ({
    async start() {},
    async delta(out, ev) {
      if (ev.content !== undefined) await out.send(JSON.stringify({ content: ev.content }), "delta");
    },
    done: (out, r) => out.send(JSON.stringify(summary(r, trace)), "done"),
    error: (out, e) => out.send(JSON.stringify(streamErrorBody(e)), "error"),
  }),
};

/** POST /v1/invoke: the seed's native request shape; always stateful (session_id is the thread). */
export const invokeRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(invokeTurn, (c) =>
  serveTurn(c, invokeFormat, c.req.valid("json")),
);
