import { storedReport } from "../pipeline/save-turn";
import { type ResponseTemplate, turnSummary, type TurnResult } from "../pipeline/turn";
import type { ResponseCreateRequest } from "../edge/responses-schemas";
import { replyToOutput, type OutputItem } from "./convert";
import type { ResponsePlan } from "./plan";

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

/** The fields of a Response that come from the request (the same in every event of a stream). */
export function requestEcho(body: ResponseCreateRequest, plan: ResponsePlan): Record<string, unknown> {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: plan.previousResponseId,
    conversation: plan.conversationId !== null ? { id: plan.conversationId } : null,
    store: plan.store,
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    text: { format: body.text?.format ?? { type: "text" }, ...(body.text?.verbosity != null ? { verbosity: body.text.verbosity } : {}) },
    tool_choice: body.tool_choice ?? "auto",
    tools: (body.tools ?? []).map((t) => ({
      type: "function",
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters ?? null,
      // What the model was sent (convert.ts toChatParams): the request's own, or none.
      strict: t.strict ?? null,
    })),
    truncation: body.truncation ?? "auto",
    max_tool_calls: body.max_tool_calls ?? null,
    user: body.user,
    background: false,
    reasoning: body.reasoning?.effort != null ? { effort: body.reasoning.effort, summary: null } : null,
    service_tier: body.service_tier ?? "default",
    prompt_cache_key: body.prompt_cache_key ?? null,
    prompt_cache_retention: body.prompt_cache_retention ?? null,
    safety_identifier: body.safety_identifier ?? null,
    access_programs: null,
  };
}

/**
 * A Response object (openai resources/responses `Response`) plus the `edgeweave` summary: the
 * request's part (`t`, made before the run) and the turn's. The same function renders a stored
 * Response in its thread's object (in the run's save) and every other Response in the Worker.
 */
export function responseBody(
  t: ResponseTemplate,
  stored: boolean,
  model: string,
  status: ResponseStatus,
  r?: Omit<TurnResult, "state" | "timings">,
  error?: { code: string; message: string },
) {
  const output: OutputItem[] = r ? replyToOutput(r.reply, t.item, stored, r.stepTexts) : [];
  return {
    id: t.id,
    object: "response" as const,
    created_at: t.created_at,
    status,
    ...(status === "completed" || status === "incomplete" ? { completed_at: nowSeconds() } : {}),
    error: error ?? null,
    incomplete_details:
      status === "incomplete" ? { reason: r?.finishReason === "content_filter" ? ("content_filter" as const) : ("max_output_tokens" as const) } : null,
    model,
    output,
    ...t.echo,
    usage: r
      ? {
          input_tokens: r.usage.prompt_tokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: r.usage.completion_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: r.usage.total_tokens,
        }
      : null,
    // Which facts the model was given and why, as on chat; capped like the checkpoint's copy, since this body is stored too.
    ...(r ? { edgeweave: turnSummary(r, { stored, memory: storedReport }) } : {}),
  };
}

/**
 * A completed turn's Response as its creator gets it (`body`) and as its thread's object stores it
 * with the turn's checkpoint (`record`: asStored, so without the per-call instructions).
 */
export function storedResponse(t: ResponseTemplate, r: Omit<TurnResult, "state" | "timings"> & { checkpointId: string }) {
  const body = responseBody(t, true, r.model.name, statusOf(r), r);
  return {
    body,
    record: {
      id: t.id,
      checkpoint_id: r.checkpointId,
      // The provider's ids, in output order: what the thread holds, and what an aliased call_id (fc_…_<n>) stands for.
      call_ids: (r.reply.tool_calls ?? []).map((c) => c.id),
      body: JSON.stringify(asStored(body)),
      input: JSON.stringify(t.input),
      created_at: t.created_at,
    },
  };
}

/**
 * A Response as it is stored and read back: `instructions` are per call (only the creating
 * request's answer echoes them, as OpenAI's does), so the record never holds them and no later
 * read — by another key that reaches the thread, or by the creator — returns them.
 */
export const asStored = <T extends Record<string, unknown>>(response: T): T & { instructions: null } => ({ ...response, instructions: null });

/** OpenAI's: a model stopped by its output limit or a content filter did not finish (incomplete_details says which). */
export const statusOf = (r: Pick<TurnResult, "finishReason">): ResponseStatus =>
  r.finishReason === "length" || r.finishReason === "content_filter" ? "incomplete" : "completed";
