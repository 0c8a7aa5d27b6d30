import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { budgetTags } from "../budgets/tags";
import { fail, isAppError } from "../core/errors";
import { errorText, log } from "../core/log";
import { estimateTextTokens } from "../core/tokens";
import { anthropicError } from "../anthropic/errors";
import { messageId, turnToMessage } from "../anthropic/from-turn";
import { anthropicErrorResponses } from "../anthropic/openapi";
import { CountTokensRequest, MessageResponse, MessagesRequest, type MessageParam } from "../anthropic/schema";
import { CLAUDE_SESSION_HEADER, CLAUDE_SESSION_MODE_HEADER, sessionThreadId } from "../anthropic/session";
import { MessageStream } from "../anthropic/stream";
import { messagesToTurn } from "../anthropic/to-turn";
import { droppedWarning, outputLimitWarning } from "../pipeline/model-call";
import { toChat, tokensOf } from "../pipeline/prompt";
import { turnSummary, type TraceLevel, type TurnInput, type TurnResult } from "../pipeline/turn";
import type { ModelConfig } from "../config/model-config";
import { requireKnownModel } from "../routing/closest-models";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { namedThread } from "./thread-choice";
import { RUN_ERRORS, serveTurn, type WireFormat } from "./turn-edge";
import { type RequestedScopes, TraceLevel as TraceLevelSchema } from "../edge/chat-schemas";
import { jsonContent, jsonOrEventStream } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";

/**
 * Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens), so the official
 * Anthropic SDKs and Claude Code run through edgeweave unchanged, on any provider. The request
 * becomes the same turn input as chat's (src/anthropic/to-turn.ts) and the turn's result renders
 * as a Message or its event stream (from-turn.ts, stream.ts). Errors are in Anthropic's shape
 * (src/anthropic/errors.ts, applied in src/http/errors.ts).
 */
const MessagesHeaders = z.object({
  "anthropic-version": z.string().max(64).optional().openapi({ description: "Forwarded unchanged to an Anthropic upstream" }),
  "anthropic-beta": z
    .string()
    .max(4096)
    .optional()
    .openapi({ description: "Forwarded unchanged to an Anthropic upstream; dropped for others (with a warning)" }),
  "x-thread-id": z.string().optional().openapi({ description: "Keep the conversation in this thread (or the body's thread_id)" }),
  [CLAUDE_SESSION_HEADER]: z
    .string()
    .max(100)
    .optional()
    .openapi({ description: "Claude Code's session; names the thread when x-edgeweave-claude-session is `thread`" }),
  [CLAUDE_SESSION_MODE_HEADER]: z
    .enum(["thread"])
    .optional()
    .openapi({ description: "`thread`: keep each conversation of the Claude Code session in thread cc-<session>-<digest>" }),
  "x-edgeweave-agent": z.string().max(64).optional().openapi({ description: "The agent (or the body's agent)" }),
  "x-edgeweave-memory-scopes": z.string().max(2000).optional().openapi({ description: "Comma-separated memory scopes (or the body's memory_scopes)" }),
  "x-edgeweave-trace": TraceLevelSchema.optional(),
});
type MessagesHeaders = z.infer<typeof MessagesHeaders>;

const BetaQuery = z.object({ beta: z.string().max(16).optional().openapi({ description: "Claude Code sends ?beta=true; accepted and ignored" }) });

const createMessage = createRoute({
  method: "post",
  path: "/v1/messages",
  middleware: access("run", "messages", { idempotent: true }),
  tags: ["anthropic"],
  summary: "Create a message (Anthropic Messages API; stateful with thread_id or the Claude Code session)",
  request: { query: BetaQuery, headers: MessagesHeaders, body: { content: { "application/json": { schema: MessagesRequest } }, required: true } },
  responses: {
    200: jsonOrEventStream(MessageResponse, "A Message; with stream: true, Anthropic's event stream (message_start … message_stop)"),
    ...anthropicErrorResponses(...RUN_ERRORS, "BEM-105", "BEM-109", "BEM-013", "BEM-096", "BEM-079", "BEM-130"),
  },
});

const countTokens = createRoute({
  method: "post",
  path: "/v1/messages/count_tokens",
  middleware: access("any_key", "messages"),
  tags: ["anthropic"],
  summary: "Count a Messages request's input tokens (an estimate: the one context budgets use)",
  request: { query: BetaQuery, headers: MessagesHeaders, body: { content: { "application/json": { schema: CountTokensRequest } }, required: true } },
  responses: {
    200: jsonContent(z.object({ input_tokens: z.number().int() }).openapi("AnthropicTokenCount"), "The estimate"),
    ...anthropicErrorResponses("BEM-105", "BEM-013"),
  },
});

const WARNINGS_HEADER = "X-Edgeweave-Warnings";
/** Warnings as one header-safe line (ASCII, bounded). */
function warningsHeader(warnings: readonly string[]): Record<string, string> {
  if (warnings.length === 0) return {};
  const line = warnings.join("; ").replace(/[^\x20-\x7e]/g, "?");
  return { [WARNINGS_HEADER]: line.length > 2000 ? `${line.slice(0, 1997)}...` : line };
}

const scopesHeader = (raw: string | undefined) =>
  raw
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * A setting given in the body and in its X-Edgeweave-* header must say one thing (as thread_id and
 * X-Thread-Id must, BEM-130): the body won and the header was dropped, so the turn ran with an agent
 * or layers the caller did not send alone, and a header's scope outside the key's grants was never refused.
 */
function bodyOrHeader<T>(field: string, header: string, fromBody: T | undefined, fromHeader: T | undefined, key: (v: T) => string): T | undefined {
  if (fromBody !== undefined && fromHeader !== undefined && key(fromBody) !== key(fromHeader))
    fail("BEM-011", `${field} in the body and the ${header} header differ; send one of them, or the same in both`);
  return fromBody ?? fromHeader;
}
const scopeList = (scopes: RequestedScopes): string =>
  scopes.map((s) => (typeof s === "string" ? s : s.id !== undefined ? `${s.name}:${s.id}` : s.name)).join(",");

/** The thread: the body's thread_id, X-Thread-Id, or (opted in) the Claude Code session's conversation. */
function threadOf(body: { thread_id?: string; messages: MessageParam[] }, h: MessagesHeaders): string | undefined {
  const explicit = namedThread(body.thread_id, h["x-thread-id"]);
  if (explicit !== undefined || h[CLAUDE_SESSION_MODE_HEADER] !== "thread") return explicit;
  const session = h[CLAUDE_SESSION_HEADER];
  // Session mode asked for but no session to name the thread: a stateless answer would drop the turn silently.
  if (!session) {
    fail(
      "BEM-011",
      `${CLAUDE_SESSION_MODE_HEADER}: thread needs the ${CLAUDE_SESSION_HEADER} header (Claude Code sends it), or name the thread with thread_id / X-Thread-Id`,
    );
  }
  return body.messages[0] ? sessionThreadId(session, body.messages[0]) : undefined;
}

/** An error after the first byte: Anthropic's `error` event (and no message_stop); nothing was saved. */
function streamError(e: unknown) {
  if (isAppError(e)) {
    if (e.internal) log.error("stream", { code: e.code, internal: e.internal });
    return anthropicError(e).body;
  }
  log.error("stream", { message: errorText(e) });
  return { type: "error", error: { type: "api_error", message: "Internal error", bem_code: "BEM-001" } };
}

type Body = { json: z.infer<typeof MessagesRequest>; headers: MessagesHeaders };
type Plan = { trace: TraceLevel; id: string; turn: TurnInput; maxOutput: number | undefined; messages: TurnInput["messages"] };

// Messages renders an Anthropic reply's blocks whole: nothing of it to warn about.
const summaryOf = (r: TurnResult, trace: TraceLevel) => turnSummary(r, { trace, blocks: true });

/** Anthropic's Messages API as a wire format (src/http/turn-edge.ts). */
const messagesFormat: WireFormat<Body, Plan> = {
  parse({ json: body, headers: h }, edge) {
    requireKnownModel(body.model);
    const { messages, params } = messagesToTurn(body, { version: h["anthropic-version"], beta: h["anthropic-beta"] });
    const turn: TurnInput = {
      ...edge.base(),
      agentName: bodyOrHeader("agent", "X-Edgeweave-Agent", body.agent, h["x-edgeweave-agent"], String),
      threadId: threadOf(body, h),
      messages,
      model: body.model,
      capabilities: body.capabilities,
      memoryScopes: bodyOrHeader("memory_scopes", "X-Edgeweave-Memory-Scopes", body.memory_scopes, scopesHeader(h["x-edgeweave-memory-scopes"]), scopeList),
      context: body.context,
      params,
      // Anthropic itself takes only user_id (the end user); the declared keys besides it are budget tags.
      budgetTags: budgetTags(body.metadata, { own: ["user_id"] }),
      // Clients resend the whole conversation: stored once, an edit branches (docs/concepts/resent-history.md).
      resent: true,
      // Memory after the conversation, so the client's cached prefix reaches Anthropic byte for byte.
      factsLast: true,
    };
    return { turn, stream: body.stream === true, plan: { trace: edge.trace(), id: messageId(), turn, maxOutput: params.max_output_tokens, messages } };
  },
  render: (r, plan) => turnToMessage(r, plan.id, summaryOf(r, plan.trace)),
  headers: (r) => warningsHeader(r.warnings),
  stream(plan) {
    const events = new MessageStream(plan.id, tokensOf(plan.messages.map(toChat)));
    const send = async (out: { send(data: string, event?: string): Promise<void> }, list: { event: string; data: Record<string, unknown> }[]) => {
      for (const e of list) await out.send(JSON.stringify(e.data), e.event);
    };
    return {
      // Known before the first byte: the clamp and what this provider does not take.
      headers: (m: ModelConfig) => warningsHeader([...outputLimitWarning(m, plan.maxOutput), ...droppedWarning(m, plan.turn)]),
      start: (out, m) => send(out, events.start(m.name)),
      delta: (out, ev) => send(out, events.delta(ev)),
      async done(out, r) {
        const list = events.done(r);
        // The turn's summary rides on message_delta (clients ignore fields they do not know).
        const delta = list.find((e) => e.event === "message_delta");
        if (delta) delta.data.edgeweave = summaryOf(r, plan.trace);
        await send(out, list);
      },
      error: (out, e) => out.send(JSON.stringify(streamError(e)), "error"),
    };
  },
};

export const messagesRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createMessage, (c) => serveTurn(c, messagesFormat, { json: c.req.valid("json"), headers: c.req.valid("header") }))
  .openapi(countTokens, (c) => {
    const body = c.req.valid("json");
    requireKnownModel(body.model);
    const { messages, params } = messagesToTurn({ ...body, max_tokens: 1 });
    const tools = params.tools?.length ? estimateTextTokens(JSON.stringify(params.tools)) : 0;
    return c.json({ input_tokens: tokensOf(messages.map(toChat)) + tools }, 200);
  });
