import { z } from "@hono/zod-openapi";
import { mediaUrl } from "../core/message";
import { checkToolChoice } from "../config/tool-choice";
import { Metadata, OpenAIRequestFields, ReasoningEffort, RequestedScopes, TraceLevel, Verbosity } from "./chat-schemas";

/**
 * OpenAI Responses request shapes (as the official `openai` npm client types
 * them, resources/responses), plus edgeweave's extensions. Unknown fields are
 * ignored, as on chat: clients send many we do not use.
 */
const ReasoningSummary = z.enum(["auto", "concise", "detailed"]);

const InputText = z.object({ type: z.literal("input_text"), text: z.string() });
const OutputText = z.object({ type: z.literal("output_text"), text: z.string() });
const Refusal = z.object({ type: z.literal("refusal"), refusal: z.string() });
const InputImage = z.object({
  type: z.literal("input_image"),
  image_url: mediaUrl("image").nullable().optional(),
  file_id: z.string().nullable().optional(),
  detail: z.enum(["auto", "low", "high"]).optional(),
});
const InputAudio = z.object({ type: z.literal("input_audio"), input_audio: z.object({ data: z.string(), format: z.string().max(16) }) });
export const ResponseContentPart = z.discriminatedUnion("type", [InputText, OutputText, Refusal, InputImage, InputAudio]);
export type ResponseContentPart = z.infer<typeof ResponseContentPart>;

export const MessageItem = z.object({
  type: z.literal("message").optional(),
  id: z.string().max(256).optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(ResponseContentPart).max(64)]),
  status: z.string().optional(),
});
export const FunctionCallItem = z.object({
  type: z.literal("function_call"),
  id: z.string().max(256).optional(),
  call_id: z.string().min(1).max(256),
  name: z.string().min(1).max(128),
  arguments: z.string(),
  status: z.string().optional(),
});
export const FunctionCallOutputItem = z.object({
  type: z.literal("function_call_output"),
  id: z.string().max(256).nullable().optional(),
  call_id: z.string().min(1).max(256),
  output: z.union([z.string(), z.array(ResponseContentPart).max(64)]),
  status: z.string().nullable().optional(),
});
/** Items a model may return that carry nothing to replay here (kept out of the thread). */
const ReasoningItem = z.object({ type: z.literal("reasoning") }).loose();

/** An output item of an earlier stored response, by id (resolved to that item before the run). */
export const ItemReference = z.object({ type: z.literal("item_reference"), id: z.string().min(1).max(512) });

export const InputItem = z.union([FunctionCallItem, FunctionCallOutputItem, ReasoningItem, ItemReference, MessageItem]);
export type InputItem = z.infer<typeof InputItem>;
/** Input items once references are resolved. */
export type ResolvedItem = Exclude<InputItem, { type: "item_reference" }>;

export const FunctionTool = z.object({
  type: z.literal("function"),
  name: z.string().min(1).max(64),
  description: z.string().max(8192).nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

export const TextFormat = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    name: z.string().min(1).max(64),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullable().optional(),
  }),
]);

export { Metadata } from "./chat-schemas";

export const ResponseCreateRequest = z
  .object({
    model: z.string().min(1).max(128).openapi({ description: "A configured model name, or `auto` to route", example: "auto" }),
    input: z.union([z.string(), z.array(InputItem).max(1000)]),
    instructions: z.string().max(1_000_000).nullable().optional(),
    previous_response_id: z.string().min(1).max(256).nullable().optional(),
    conversation: z
      .union([z.string().min(1).max(256), z.object({ id: z.string().min(1).max(256) })])
      .nullable()
      .optional(),
    store: z.boolean().nullable().optional(),
    stream: z.boolean().nullable().optional(),
    tools: z.array(FunctionTool).max(128).optional(),
    tool_choice: z.union([z.enum(["none", "auto", "required"]), z.object({ type: z.literal("function"), name: z.string() })]).optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    text: z.object({ format: TextFormat.optional(), verbosity: Verbosity.nullable().optional() }).loose().nullable().optional(),
    reasoning: z
      .object({
        effort: ReasoningEffort.nullable().optional(),
        // Taken and answered as `summary: null` (no reasoning items: models are called over chat completions,
        // which give none); refusing it broke Codex CLI, which sends `summary: "auto"` by default.
        summary: ReasoningSummary.nullable().optional(),
        generate_summary: ReasoningSummary.nullable().optional(),
      })
      .nullable()
      .optional(),
    // `auto` drops the oldest turns that do not fit the model's window (edgeweave's fitting, the default here);
    // `disabled` refuses a request that does not fit (400), as OpenAI's default does.
    truncation: z.enum(["auto", "disabled"]).nullable().optional(),
    max_tool_calls: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .nullable()
      .optional()
      .openapi({ description: "The most calls of the agent's own (server) tools this response runs" }),
    ...OpenAIRequestFields,
    background: z
      .literal(false, { error: "background responses are not run here; leave background out or false (the call answers when the response is done)" })
      .nullable()
      .optional(),
    max_output_tokens: z.number().int().positive().nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    metadata: Metadata.nullable().optional(),
    user: z.string().max(256).optional(),
    // Not honoured here, so refused rather than ignored: a stored prompt lives at OpenAI (its instructions
    // would be missing), and token logprobs are not returned.
    prompt: z.null({ error: "stored prompts are OpenAI's; send the prompt's text as instructions" }).optional(),
    top_logprobs: z.literal(0, { error: "logprobs are not returned here; leave top_logprobs out or 0" }).nullable().optional(),
    include: z
      .array(z.string().max(128))
      .max(32)
      .refine((i) => !i.includes("message.output_text.logprobs"), { error: "message.output_text.logprobs: logprobs are not returned here" })
      .nullable()
      .optional(),
    // edgeweave extensions (as on chat)
    agent: z.string().max(64).optional(),
    memory_scopes: RequestedScopes.optional(),
    capabilities: z.array(z.string().max(64)).max(32).optional(),
    context: z.record(z.string(), z.unknown()).optional(),
    trace: TraceLevel.optional(),
  })
  .superRefine((b, ctx) =>
    checkToolChoice(
      (b.tools ?? []).map((t) => t.name),
      typeof b.tool_choice === "object" ? b.tool_choice.name : undefined,
      ctx,
      { tools: "tools", nameIn: ["name"], choice: ["tool_choice", "name"] },
    ),
  )
  .openapi("ResponseCreateRequest");
export type ResponseCreateRequest = z.infer<typeof ResponseCreateRequest>;

export const ResponseObject = z
  .object({ id: z.string(), object: z.literal("response") })
  .loose()
  .openapi("Response");

/** The path id of a response or a conversation. */
export const IdParam = z.object({ id: z.string().min(1).max(256) });

/** OpenAI's list paging, as the Responses input-items and Conversations items lists take it. */
export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  order: z.enum(["asc", "desc"]).optional(),
  after: z.string().max(300).optional(),
});
