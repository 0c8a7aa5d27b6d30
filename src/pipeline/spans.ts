import { messageText, type Content, type ToolCall } from "../core/message";
import { type Attrs, contentOf, errorCode, publicMessage, type Span, type SpanParent } from "../core/trace";
import type { ModelConfig } from "../config/model-config";
import { type Attempt, isFailoverError } from "../providers/failover";
import type { ChatResult } from "../providers/types";
import type { RouteResult } from "../routing/router";
import type { Call, RoutedCall } from "./model-call";
import type { TurnInput, TurnResult } from "./turn";

/**
 * A turn's spans in OpenTelemetry's GenAI conventions (docs/operations/tracing.md): the agent
 * invocation around the run, one `chat` span per model call (failover inside it), `execute_tool`
 * per server tool call (tools/execute.ts) and the memory operations (memory-tools.ts, prepare.ts).
 * Attributes outside the conventions are `edgeweave.*`.
 */

type Said = { role: string; content?: Content | null; tool_calls?: ToolCall[]; tool_call_id?: string };

/** Messages in the conventions' JSON shape (role and parts), for the opt-in content attributes. */
function messagesJson(messages: readonly Said[]) {
  return messages.map((m) => ({
    role: m.role,
    parts: [
      ...(m.role === "tool"
        ? [{ type: "tool_call_response", id: m.tool_call_id, result: messageText(m.content ?? "") }]
        : m.content
          ? [{ type: "text", content: messageText(m.content) }]
          : []),
      ...(m.tool_calls ?? []).map((c) => ({ type: "tool_call", id: c.id, name: c.function.name, arguments: c.function.arguments })),
    ],
  }));
}

/** The id the provider is sent for `m` (provider_config.model), else its configured name. */
const upstreamId = (m: ModelConfig): string => m.provider_config.model ?? m.name;

/** `gen_ai.provider.name`: the conventions' names where one exists (openai, anthropic, groq), else ours. */
const providerName = (m: ModelConfig): string => m.provider;

/** Each try of the call as `model outcome [status] [code]`: the failover causes, in order. */
const attemptsOf = (attempts: readonly Attempt[]): string[] =>
  attempts.map((a) => [a.model, a.outcome, a.status, a.error_code].filter((x) => x !== undefined).join(" "));

export function agentStart(parent: SpanParent | undefined, input: TurnInput): { name: string; attrs: Attrs } {
  const agent = input.agentName ?? "default";
  return {
    name: `invoke_agent ${agent}`,
    attrs: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": agent,
      "gen_ai.conversation.id": input.threadId,
      "edgeweave.tenant.id": input.principal.tenant,
      "gen_ai.input.messages": contentOf(parent, () => messagesJson(input.messages)),
    },
  };
}

export function agentEnd(span: Span, r: TurnResult): void {
  span.set({
    "gen_ai.provider.name": providerName(r.model),
    "gen_ai.request.model": upstreamId(r.route.model),
    "gen_ai.response.model": upstreamId(r.model),
    "gen_ai.usage.input_tokens": r.usage.prompt_tokens,
    "gen_ai.usage.output_tokens": r.usage.completion_tokens,
    "gen_ai.response.finish_reasons": [r.finishReason],
    "edgeweave.route.reason": r.route.reason,
    "edgeweave.checkpoint.id": r.checkpointId ?? undefined,
    "edgeweave.cost_usd": r.usage.cost,
    "gen_ai.output.messages": contentOf(span, () => [{ ...messagesJson([r.reply])[0], finish_reason: r.finishReason }]),
  });
}

/**
 * One model call as a `chat` span: the router's choice and every failover attempt on it, the model
 * that answered, its usage and finish reason; a stream's time to its first chunk.
 */
export async function tracedCall(parent: SpanParent | undefined, call: RoutedCall, run: (c: RoutedCall) => Promise<Call>): Promise<Call> {
  if (!parent) return run(call);
  const { route, input } = call.plan;
  const routed = route.model;
  const params = input.params;
  const span = parent.child(`chat ${upstreamId(routed)}`, "client", {
    "gen_ai.operation.name": "chat",
    "gen_ai.conversation.id": input.threadId,
    "gen_ai.request.stream": call.stream ? true : undefined,
    "gen_ai.request.max_tokens": params?.max_output_tokens,
    "gen_ai.request.temperature": params?.temperature,
    "gen_ai.request.top_p": params?.top_p,
    ...routeAttrs(route),
    "gen_ai.input.messages": contentOf(parent, () => messagesJson(call.messages)),
  });
  const started = Date.now();
  let first: number | undefined;
  const stream = call.stream && {
    ...call.stream,
    delta: (ev: Parameters<NonNullable<RoutedCall["stream"]>["delta"]>[0]) => {
      first ??= Date.now();
      return call.stream?.delta(ev);
    },
  };
  try {
    const c = await run(stream ? { ...call, stream } : call);
    span.rename(`chat ${upstreamId(c.model)}`).set({
      ...modelAttrs(c.model),
      "gen_ai.response.model": c.result.upstream_model || upstreamId(c.model),
      "gen_ai.response.finish_reasons": [c.result.finish_reason],
      "gen_ai.usage.input_tokens": c.usage.prompt_tokens,
      "gen_ai.usage.output_tokens": c.usage.completion_tokens,
      "gen_ai.response.time_to_first_chunk": first !== undefined ? (first - started) / 1000 : undefined,
      "edgeweave.usage.estimated": c.usage.estimated,
      "edgeweave.cost_usd": c.usage.cost,
      "edgeweave.failover.attempts": attemptsOf(c.attempts),
      "gen_ai.output.messages": contentOf(span, () => outputOf(c.result)),
    });
    return c;
  } catch (e) {
    span.set({ ...modelAttrs(routed), "edgeweave.failover.attempts": isFailoverError(e) ? attemptsOf(e.attempts) : undefined });
    span.fail(errorCode(e), publicMessage(e));
    throw e;
  } finally {
    span.end();
  }
}

function routeAttrs(route: RouteResult): Attrs {
  return {
    "edgeweave.route.model": route.model.name,
    "edgeweave.route.reason": route.reason,
    "edgeweave.route.candidates": route.candidates.map((m) => m.name),
  };
}

function modelAttrs(m: ModelConfig): Attrs {
  const base = m.provider_config.base_url;
  return {
    "gen_ai.provider.name": providerName(m),
    "gen_ai.request.model": upstreamId(m),
    "edgeweave.model": m.name,
    "server.address": base && URL.canParse(base) ? new URL(base).hostname : undefined,
  };
}

const outputOf = (r: ChatResult) => [{ ...messagesJson([r.message])[0], finish_reason: r.finish_reason }];
