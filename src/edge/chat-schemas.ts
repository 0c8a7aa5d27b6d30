import { z } from "@hono/zod-openapi";
import { MemoryReport } from "../memory/report";
import { checkPartsForRole, ClientContent, ClientContentPart, ToolCall } from "../core/message";
import { checkToolChoice } from "../config/tool-choice";
import { REASONING_EFFORTS } from "../providers/openai-fields";

/** OpenAI's metadata: at most 16 string pairs (keys up to 64 characters, values up to 512). */
export const Metadata = z.record(z.string().max(64), z.string().max(512)).refine((m) => Object.keys(m).length <= 16, { message: "at most 16 keys" });

// Checked by the thread layer, so a bad id gets its own code (BEM-030) as on the thread routes.
const ThreadIdField = z.string().min(1).max(512).openapi({ description: "1-128 characters of A-Z a-z 0-9 . _ : -, not only dots (else BEM-030)" });
const ScopeString = z.string().min(1).max(200);
const ScopeObject = z.object({ name: z.string().min(1).max(32), id: z.string().min(1).max(128).optional() });

/** Both the seed's `{name, id}` objects and `name:id` strings are accepted. */
export const RequestedScopes = z.array(z.union([ScopeString, ScopeObject])).max(16);
export type RequestedScopes = z.infer<typeof RequestedScopes>;

/** Asks for the full routing trace in a run's response (the default is the compact summary). */
export const TraceLevel = z.enum(["summary", "full"]).openapi({ description: "`full`: the response's routing adds the candidates and the per-strategy trace" });
export const TraceHeader = z.object({
  "x-edgeweave-trace": TraceLevel.optional().openapi({ description: "`full` for the whole routing trace in the response (same as the body's `trace`)" }),
});

export const ChatTool = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string().min(1).max(64),
    description: z.string().max(8192).optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

export const ChatMessage = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]),
    content: ClientContent.nullable().optional(),
    name: z.string().max(128).optional(),
    tool_calls: z.array(ToolCall).max(128).optional(),
    tool_call_id: z.string().max(256).optional(),
  })
  .superRefine((m, ctx) => checkPartsForRole(m, ctx));
export type ChatMessage = z.infer<typeof ChatMessage>;

/**
 * OpenAI's request fields chat and Responses share that reach OpenAI-compatible models as sent (an
 * Anthropic model maps reasoning effort to a thinking budget and safety_identifier to its user id;
 * what a provider does not get is named in the turn's warnings: src/providers/openai-fields.ts).
 */
export const OpenAIRequestFields = {
  service_tier: z.enum(["auto", "default", "flex", "scale", "priority"]).nullable().optional(),
  prompt_cache_key: z.string().max(1024).nullable().optional(),
  prompt_cache_retention: z.enum(["in-memory", "24h"]).nullable().optional(),
  safety_identifier: z.string().max(256).nullable().optional(),
};
export const ReasoningEffort = z.enum(REASONING_EFFORTS);
export const Verbosity = z.enum(["low", "medium", "high"]);

/** OpenAI Chat Completions request, plus edgeweave's optional extensions. Unknown fields are ignored. */
export const ChatCompletionRequest = z
  .object({
    model: z.string().min(1).max(128).openapi({ description: "A configured model name, or `auto` to route", example: "auto" }),
    messages: z.array(ChatMessage).min(1).max(1000),
    stream: z.boolean().optional(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
    tools: z.array(ChatTool).max(128).optional(),
    tool_choice: z
      .union([z.enum(["none", "auto", "required"]), z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) })])
      .optional(),
    parallel_tool_calls: z.boolean().optional(),
    response_format: z.record(z.string(), z.unknown()).optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    max_tokens: z.number().int().positive().nullable().optional(),
    max_completion_tokens: z.number().int().positive().nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string()).max(4)])
      .nullable()
      .optional(),
    n: z.literal(1).nullable().optional(),
    // Token logprobs are not returned here: asking for them is a 400, not an answer with `logprobs: null`.
    logprobs: z.literal(false, { error: "logprobs are not returned here; leave logprobs out or false" }).nullable().optional(),
    top_logprobs: z.literal(0, { error: "logprobs are not returned here; leave top_logprobs out or 0" }).nullable().optional(),
    user: z.string().max(256).optional(),
    // OpenAI's ranges; an Anthropic model has none of the three (named in the turn's warnings).
    seed: z.number().int().nullable().optional(),
    frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
    presence_penalty: z.number().min(-2).max(2).nullable().optional(),
    // OpenAI's range: token ids to a bias in [-100, 100], at most 300 of them.
    logit_bias: z
      .record(z.string().regex(/^\d{1,10}$/, "a token id"), z.number().min(-100).max(100))
      .refine((b) => Object.keys(b).length <= 300, { error: "at most 300 token ids" })
      .nullable()
      .optional(),
    prediction: z
      .object({ type: z.literal("content"), content: z.union([z.string(), z.array(z.object({ type: z.literal("text"), text: z.string() })).max(64)]) })
      .nullable()
      .optional(),
    reasoning_effort: ReasoningEffort.nullable().optional(),
    verbosity: Verbosity.nullable().optional(),
    ...OpenAIRequestFields,
    // Not kept or produced here, so refused rather than ignored: a stored completion is read back from
    // OpenAI (GET /v1/chat/completions/{id}, not served; a thread keeps its turns), and no model here answers in audio.
    store: z
      .literal(false, { error: "chat completions are not stored for reading back here; send a thread_id (the thread keeps its turns) or use /v1/responses" })
      .nullable()
      .optional(),
    metadata: Metadata.nullable()
      .optional()
      .openapi({ description: "Budget tags only: the keys of models.yaml `budget_metadata_keys` (a completion is not stored, so no other key is kept)" }),
    modalities: z
      .array(z.literal("text", { error: 'only text is answered here; leave modalities out or ["text"]' }))
      .max(1)
      .nullable()
      .optional(),
    audio: z.null({ error: "audio output is not produced here; leave audio out" }).optional(),
    // edgeweave extensions
    thread_id: ThreadIdField.optional().openapi({ description: "Makes the call stateful: the server keeps the history; send only new messages" }),
    agent: z.string().max(64).optional(),
    memory_scopes: RequestedScopes.optional(),
    capabilities: z.array(z.string().max(64)).max(32).optional(),
    checkpoint_id: z.string().max(64).optional().openapi({ description: "Continue from this checkpoint (time travel / fork)" }),
    context: z.record(z.string(), z.unknown()).optional().openapi({ description: "Per-run context for the agent's dynamic prompt" }),
    trace: TraceLevel.optional(),
  })
  .superRefine((b, ctx) =>
    checkToolChoice(
      (b.tools ?? []).map((t) => t.function.name),
      typeof b.tool_choice === "object" ? b.tool_choice.function.name : undefined,
      ctx,
      { tools: "tools", nameIn: ["function", "name"], choice: ["tool_choice", "function", "name"] },
    ),
  )
  .openapi("ChatCompletionRequest");
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

const Attempt = z.object({
  model: z.string(),
  outcome: z.string(),
  status: z.number().optional(),
  error_code: z.string().optional(),
  delay_ms: z.number().optional(),
});

/** The compact routing record (the default); `candidates` and `trace` only with the full trace. */
export const RoutingSummary = z
  .object({
    model: z.string(),
    reason: z.string(),
    candidate_count: z.number().int().openapi({ description: "How many models the failover order held" }),
    attempts: z.array(Attempt),
    candidates: z.array(z.string()).optional().openapi({ description: "The failover order (full trace only)" }),
    trace: z.array(z.unknown()).optional().openapi({ description: "Every routing step's input, output and exclusions (full trace only; see POST /v1/route)" }),
  })
  .openapi("RoutingSummary");

export const Usage = z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number(), cost: z.number(), estimated: z.boolean() });

export const ChatCompletionResponse = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion"),
    created: z.number(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number(),
        message: z.object({ role: z.literal("assistant"), content: z.string().nullable(), tool_calls: z.array(ToolCall).optional(), refusal: z.null() }),
        finish_reason: z.string(),
        logprobs: z.null(),
      }),
    ),
    usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }),
    edgeweave: z.object({
      thread_id: z.string().nullable(),
      checkpoint_id: z.string().nullable(),
      routing: RoutingSummary,
      cost: z.number(),
      reconciled: z
        .object({ matched: z.number().int(), appended: z.number().int(), branched_from: z.string().nullable(), reset: z.literal(true).optional() })
        .optional()
        .openapi({
          description:
            "On a thread: how many sent messages it already held, how many were appended, and the checkpoint a diverging resend branched from; `reset: true` when it diverged inside the thread's first turn (the head starts empty, history keeps the old path)",
        }),
      usage_estimated: z.boolean().openapi({ description: "true when the provider reported no usage and the tokens are estimated" }),
      warnings: z.array(z.string()).openapi({ description: "What the run could not honour, e.g. facts that did not fit the budget" }),
      memory: MemoryReport.optional(),
    }),
  })
  .openapi("ChatCompletionResponse");

/**
 * The seed's native request. Strict, as edgeweave's own shapes are (no third-party client sends it):
 * an unknown field is BEM-011 naming it, since chat's spellings (`model`, `memory_scopes` at the top)
 * were dropped without a word and the turn ran without them.
 */
export const InvokeRequest = z
  .strictObject({
    agent_name: z.string().min(1).max(64),
    session_id: ThreadIdField,
    // The user's turn: parts only an assistant turn carries are refused (checkPartsForRole).
    content: z
      .array(ClientContentPart)
      .min(1)
      .max(64)
      .superRefine((content, ctx) => checkPartsForRole({ role: "user", content }, ctx, [])),
    // Besides its own two fields, budget tags: the keys of models.yaml `budget_metadata_keys` (others are refused, src/budgets/tags.ts).
    metadata: z
      .object({ capabilities: z.array(z.string().max(64)).max(32).optional(), memory_scopes: RequestedScopes.optional() })
      .catchall(z.string().max(512))
      .optional(),
    model_override: z.string().max(128).optional(),
    stream: z.boolean().optional(),
    checkpoint_id: z.string().max(64).optional(),
    context: z.record(z.string(), z.unknown()).optional(),
    trace: TraceLevel.optional(),
  })
  .openapi("InvokeRequest");
export type InvokeRequest = z.infer<typeof InvokeRequest>;

export const InvokeResponse = z
  .object({
    session_id: z.string(),
    checkpoint_id: z.string().nullable(),
    message: z.object({ role: z.literal("assistant"), content: z.string().nullable(), tool_calls: z.array(ToolCall).optional() }),
    model: z.string(),
    routing: RoutingSummary,
    usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), cost: z.number(), estimated: z.boolean() }),
    warnings: z.array(z.string()).optional(),
    memory: MemoryReport.optional(),
  })
  .openapi("InvokeResponse");

/** The shared OpenAI fields a request set, as turn params. */
export function openAIParams(body: {
  service_tier?: string | null;
  prompt_cache_key?: string | null;
  prompt_cache_retention?: string | null;
  safety_identifier?: string | null;
}) {
  return {
    ...(body.service_tier != null ? { service_tier: body.service_tier } : {}),
    ...(body.prompt_cache_key != null ? { prompt_cache_key: body.prompt_cache_key } : {}),
    ...(body.prompt_cache_retention != null ? { prompt_cache_retention: body.prompt_cache_retention } : {}),
    ...(body.safety_identifier != null ? { safety_identifier: body.safety_identifier } : {}),
  };
}
