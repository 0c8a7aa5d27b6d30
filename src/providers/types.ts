import { z } from "@hono/zod-openapi";
import { Content, ContentPart, RedactedThinkingPart, ThinkingPart, ToolCall } from "../core/message";

/**
 * The normalized request and response every adapter speaks. Messages are
 * OpenAI-style (the thread's own format); each adapter maps them to its wire.
 */
export const ChatMessage = z.object({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: Content.nullable().optional(),
  name: z.string().optional(),
  tool_calls: z.array(ToolCall).optional(),
  tool_call_id: z.string().optional(),
  is_error: z.boolean().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const FunctionTool = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});
export type FunctionTool = z.infer<typeof FunctionTool>;

export const ToolChoice = z.union([z.enum(["none", "auto", "required"]), z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) })]);
export type ToolChoice = z.infer<typeof ToolChoice>;

/**
 * Anthropic Messages fields with no counterpart in other providers: sent only when the routed model's
 * provider is Anthropic, dropped for the others (named in the turn's warnings; docs/guides/anthropic-and-claude-code.md).
 * `version`/`beta` are the client's anthropic-version/anthropic-beta
 * headers, forwarded unchanged; `body` holds other top-level fields passed through as sent.
 */
export const AnthropicExtras = z.object({
  version: z.string().max(64).optional(),
  beta: z.string().max(4096).optional(),
  thinking: z.record(z.string(), z.unknown()).optional(),
  top_k: z.number().int().optional(),
  /** Tools that are not client functions (Anthropic server tools, e.g. web_search), as sent. */
  server_tools: z.array(z.record(z.string(), z.unknown())).optional(),
  /** The index of the client tool whose definition carries a cache breakpoint, and that breakpoint. */
  tool_cache_control: z.object({ index: z.number().int().min(0), cache_control: z.record(z.string(), z.unknown()) }).optional(),
  body: z.record(z.string(), z.unknown()).optional(),
});
export type AnthropicExtras = z.infer<typeof AnthropicExtras>;

export const ChatRequest = z.object({
  messages: z.array(ChatMessage).min(1),
  tools: z.array(FunctionTool).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: z.boolean().optional(),
  /** OpenAI shape: {type:"text"|"json_object"} or {type:"json_schema", json_schema:{name, schema, strict?}}. */
  response_format: z.record(z.string(), z.unknown()).optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  max_output_tokens: z.number().int().positive().optional(),
  stop: z.union([z.string(), z.array(z.string())]).optional(),
  user: z.string().optional(),
  /** OpenAI chat sampling fields: OpenAI-compatible servers and Ollama take them, Anthropic does not. */
  seed: z.number().int().optional(),
  frequency_penalty: z.number().optional(),
  presence_penalty: z.number().optional(),
  /** OpenAI's other chat fields: OpenAI-compatible servers get them; elsewhere they are named in the warnings (src/providers/openai-fields.ts). */
  logit_bias: z.record(z.string(), z.number()).optional(),
  prediction: z.record(z.string(), z.unknown()).optional(),
  reasoning_effort: z.string().optional(),
  verbosity: z.string().optional(),
  service_tier: z.string().optional(),
  prompt_cache_key: z.string().optional(),
  prompt_cache_retention: z.string().optional(),
  safety_identifier: z.string().optional(),
  anthropic: AnthropicExtras.optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

export const FinishReason = z.enum(["stop", "length", "tool_calls", "content_filter"]);
export type FinishReason = z.infer<typeof FinishReason>;

export const Usage = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  /** Anthropic's prompt-cache counts (already included in prompt_tokens), passed through to Messages clients. */
  cache_creation_input_tokens: z.number().int().min(0).optional(),
  cache_read_input_tokens: z.number().int().min(0).optional(),
  /** Anthropic's server-tool counts (`web_search_requests`, …), passed through to Messages clients. */
  server_tool_use: z.record(z.string(), z.number().int().min(0)).optional(),
});
export type Usage = z.infer<typeof Usage>;

export const ChatResult = z.object({
  message: z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(ToolCall).optional(),
    /** Anthropic extended-thinking blocks, in order, signatures unchanged (they precede the text). */
    thinking: z.array(z.union([ThinkingPart, RedactedThinkingPart])).optional(),
    /**
     * The whole reply as the thread stores it (core/message.ts parts, in the upstream's order: thinking,
     * text with its citations, a `tool_call` at each call's place, server-tool and unknown blocks whole),
     * when the fields above cannot say it all (an Anthropic upstream's web search, text after a tool_use,
     * several text blocks); absent otherwise. `content` is still the reply's text and `tool_calls` its calls.
     */
    parts: z.array(ContentPart).optional(),
  }),
  finish_reason: FinishReason,
  /** Anthropic's stop_reason when it said more than finish_reason can (stop_sequence, pause_turn, refusal). */
  stop_reason: z.string().optional(),
  stop_sequence: z.string().nullable().optional(),
  /** Undefined when the provider did not report usage (the caller estimates). */
  usage: Usage.optional(),
  upstream_model: z.string(),
});
export type ChatResult = z.infer<typeof ChatResult>;

/** One fragment of a streamed tool call, OpenAI-style: `index` ties fragments together. */
export const ToolCallDelta = z.object({
  index: z.number().int().min(0),
  id: z.string().optional(),
  name: z.string().optional(),
  arguments: z.string().optional(),
});
export type ToolCallDelta = z.infer<typeof ToolCallDelta>;

/** A streamed piece of an Anthropic thinking block: `index` numbers thinking blocks; the signature comes last. */
export const ThinkingDelta = z.object({
  index: z.number().int().min(0),
  thinking: z.string().optional(),
  signature: z.string().optional(),
  /** A redacted_thinking block arrives whole. */
  redacted: z.string().optional(),
});
export type ThinkingDelta = z.infer<typeof ThinkingDelta>;

/**
 * An Anthropic upstream's content-block event as it came (`body`: the start's content_block, the delta's
 * delta, {} for a stop; `index` the upstream's): an Anthropic client gets the block events unchanged
 * (anthropic/stream.ts), and the stream's result its blocks in order (stream-accumulator.ts).
 */
export const AnthropicBlockEvent = z.object({
  event: z.enum(["content_block_start", "content_block_delta", "content_block_stop"]),
  index: z.number().int().min(0),
  body: z.record(z.string(), z.unknown()),
});
export type AnthropicBlockEvent = z.infer<typeof AnthropicBlockEvent>;

export const DeltaEvent = z.object({
  type: z.literal("delta"),
  content: z.string().optional(),
  tool_calls: z.array(ToolCallDelta).optional(),
  thinking: ThinkingDelta.optional(),
  anthropic: AnthropicBlockEvent.optional(),
  /** Which model call of a run the delta is from, on the calls after the first (a step after the agent's own tools ran). */
  step: z.number().int().min(1).optional(),
});
export const DoneEvent = z.object({
  type: z.literal("done"),
  finish_reason: FinishReason,
  stop_reason: z.string().optional(),
  stop_sequence: z.string().nullable().optional(),
  usage: Usage.optional(),
  upstream_model: z.string(),
});
/** A stream is deltas, then exactly one `done`; a stream without `done` threw BEM-074. */
export const StreamEvent = z.discriminatedUnion("type", [DeltaEvent, DoneEvent]);
export type DeltaEvent = z.infer<typeof DeltaEvent>;
export type DoneEvent = z.infer<typeof DoneEvent>;
export type StreamEvent = z.infer<typeof StreamEvent>;
