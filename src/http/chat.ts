import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { budgetTags } from "../budgets/tags";
import { turnSummary, type TraceLevel, type TurnInput, type TurnResult } from "../pipeline/turn";
import type { DeltaEvent } from "../providers/types";
import { requireKnownModel } from "../routing/closest-models";
import type { ParsedMessageInput } from "../core/message";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { ChatCompletionRequest, ChatCompletionResponse, openAIParams, TraceHeader } from "../edge/chat-schemas";
import { AppError } from "../core/errors";
import { errorResponses, jsonOrEventStream } from "../edge/openapi-errors";
import { namedThread } from "./thread-choice";
import { RUN_ERRORS, serveTurn, streamErrorBody, type WireFormat } from "./turn-edge";
import { validationHook } from "../edge/validation";
import { randomHex } from "../core/encoding";
import type { SseWriter } from "./sse";

const chatCompletion = createRoute({
  method: "post",
  path: "/v1/chat/completions",
  middleware: access("run", "conversation", { idempotent: true }),
  tags: ["chat"],
  summary: "Chat completion (OpenAI-compatible; stateful with thread_id)",
  request: {
    headers: TraceHeader.extend({ "x-thread-id": z.string().optional().openapi({ description: "Alternative to the body's thread_id" }) }),
    body: { content: { "application/json": { schema: ChatCompletionRequest } }, required: true },
  },
  responses: {
    200: jsonOrEventStream(ChatCompletionResponse, "A chat.completion; with stream: true, SSE chat.completion.chunk events ending in data: [DONE]"),
    ...errorResponses(...RUN_ERRORS, "BEM-105", "BEM-109", "BEM-130"),
  },
});

const completionId = () => `chatcmpl-${randomHex()}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

function toolCallDeltas(ev: DeltaEvent) {
  return ev.tool_calls?.map((t) => ({
    index: t.index,
    ...(t.id ? { id: t.id, type: "function" } : {}),
    function: { ...(t.name ? { name: t.name } : {}), arguments: t.arguments ?? "" },
  }));
}

type Body = { json: z.infer<typeof ChatCompletionRequest>; threadHeader: string | undefined };
type Plan = { trace: TraceLevel; model: string; includeUsage: boolean };

/** Steps' texts are a blank line apart, streamed (chatFormat.stream) and not. */
const STEP_SEPARATOR = "\n\n";

/**
 * Chat's answer: the text of every step of the run (an agent's own tools take steps), a blank line
 * apart, as its stream sends them; the reply's own content (null, "") when no step had text.
 */
function answerText(r: Pick<TurnResult, "reply" | "stepTexts">): string | null {
  const texts = [...(r.stepTexts ?? []), r.reply.content ?? ""].filter((t) => t !== "");
  return texts.length > 0 ? texts.join(STEP_SEPARATOR) : r.reply.content;
}

const usageOf = (r: TurnResult) => ({ prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens, total_tokens: r.usage.total_tokens });

/** OpenAI Chat Completions as a wire format (src/http/turn-edge.ts). */
const chatFormat: WireFormat<Body, Plan> = {
  parse({ json: body, threadHeader }, edge) {
    requireKnownModel(body.model);
    const maxOutput = body.max_completion_tokens ?? body.max_tokens;
    const turn: TurnInput = {
      ...edge.base(),
      agentName: body.agent,
      threadId: namedThread(body.thread_id, threadHeader),
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
      budgetTags: budgetTags(body.metadata),
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
        ...(body.seed != null ? { seed: body.seed } : {}),
        ...(body.frequency_penalty != null ? { frequency_penalty: body.frequency_penalty } : {}),
        ...(body.presence_penalty != null ? { presence_penalty: body.presence_penalty } : {}),
        ...(body.logit_bias != null ? { logit_bias: body.logit_bias } : {}),
        ...(body.prediction != null ? { prediction: body.prediction } : {}),
        ...(body.reasoning_effort != null ? { reasoning_effort: body.reasoning_effort } : {}),
        ...(body.verbosity != null ? { verbosity: body.verbosity } : {}),
        ...openAIParams(body),
      },
      // Clients that resend the whole history store only what is new (docs/concepts/resent-history.md): decided in the thread's object.
      resent: true,
    };
    if (body.store === false && turn.threadId !== undefined)
      throw new AppError("BEM-011", "store: false on a thread: a thread keeps its turns; leave thread_id (X-Thread-Id) out to store nothing");
    const plan = { trace: edge.trace(body.trace), model: body.model, includeUsage: body.stream_options?.include_usage === true };
    return { turn, stream: body.stream === true, plan };
  },

  render: (r, plan) => ({
    id: completionId(),
    object: "chat.completion" as const,
    created: nowSeconds(),
    model: r.model.name,
    choices: [
      {
        index: 0,
        message: { role: "assistant" as const, content: answerText(r), ...(r.reply.tool_calls ? { tool_calls: r.reply.tool_calls } : {}), refusal: null },
        finish_reason: r.finishReason,
        logprobs: null,
      },
    ],
    usage: usageOf(r),
    edgeweave: turnSummary(r, { trace: plan.trace }),
  }),

  stream(plan) {
    const id = completionId();
    const chunk = (model: string, delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created: nowSeconds(),
        model,
        choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
        ...extra,
      });
    let model = plan.model;
    // The role chunk waits for the first upstream event (start fires on it, its delta follows at once): a
    // chunk sent before said content "", so a streamed answer of calls only accumulated (in the openai
    // SDK's stream helper) to content "" where the same answer unstreamed has null. As OpenAI streams:
    // a text answer opens with content "", a call answer's first chunk is role, content null and the call.
    let opened = false;
    // The step whose text was sent last: a later step's text starts after a separator.
    let textStep: number | undefined;
    const open = async (out: SseWriter, content: "" | null, first: Record<string, unknown> = {}) => {
      opened = true;
      // As OpenAI opens a stream: the role, the content so far and `refusal: null`.
      await out.send(chunk(model, { role: "assistant", content, refusal: null, ...first }, null));
    };
    return {
      async start(_out, m) {
        model = m.name;
      },
      async delta(out, ev) {
        const d: Record<string, unknown> = {};
        if (ev.content !== undefined) d.content = ev.content;
        if (ev.content) {
          const step = ev.step ?? 0;
          if (textStep !== undefined && step !== textStep) d.content = `${STEP_SEPARATOR}${ev.content}`;
          textStep = step;
        }
        const calls = toolCallDeltas(ev);
        if (calls) d.tool_calls = calls;
        if (!opened && calls && ev.content === undefined) return open(out, null, d);
        // Reasoning or a block event first: the role goes now (not held), content still unknown.
        if (!opened) await open(out, ev.content !== undefined ? "" : null);
        // An Anthropic upstream's block event with nothing of chat's in it (a server-tool block, a block's end) is no chunk.
        if (Object.keys(d).length === 0 && ev.anthropic && !ev.thinking) return;
        await out.send(chunk(model, d, null));
      },
      async done(out, r) {
        // An upstream that answered with its end alone: the role chunk says what the answer holds.
        if (!opened) await open(out, r.reply.content === null ? null : "");
        // The finishing chunk names the model and why (and the checkpoint), with or without include_usage.
        await out.send(chunk(r.model.name, {}, r.finishReason, { edgeweave: turnSummary(r, { trace: plan.trace }) }));
        if (plan.includeUsage) {
          await out.send(
            JSON.stringify({
              id,
              object: "chat.completion.chunk",
              created: nowSeconds(),
              model: r.model.name,
              choices: [],
              usage: usageOf(r),
              edgeweave: turnSummary(r, { trace: plan.trace }),
            }),
          );
        }
        await out.send("[DONE]");
      },
      // Cut after output began: an error event and never [DONE]; nothing was saved.
      error: (out, e) => out.send(JSON.stringify(streamErrorBody(e))),
    };
  },
};

/** POST /v1/chat/completions: OpenAI-compatible, so the official clients work unchanged. */
export const chatRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(chatCompletion, (c) =>
  serveTurn(c, chatFormat, { json: c.req.valid("json"), threadHeader: c.req.valid("header")["x-thread-id"] }),
);
