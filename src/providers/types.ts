import { z } from "@hono/zod-openapi";
import { Content, ToolCall } from "../core/message";

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
});
export type ChatRequest = z.infer<typeof ChatRequest>;

export const FinishReason = z.enum(["stop", "length", "tool_calls", "content_filter"]);
export type FinishReason = z.infer<typeof FinishReason>;

export const Usage = z.object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) });
export type Usage = z.infer<typeof Usage>;

export const ChatResult = z.object({
  message: z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(ToolCall).optional(),
  }),
  finish_reason: FinishReason,
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

export const DeltaEvent = z.object({
  type: z.literal("delta"),
  content: z.string().optional(),
  tool_calls: z.array(ToolCallDelta).optional(),
});
export const DoneEvent = z.object({
  type: z.literal("done"),
  finish_reason: FinishReason,
  usage: Usage.optional(),
  upstream_model: z.string(),
});
/** A stream is deltas, then exactly one `done`; a stream without `done` threw BEM-074. */
export const StreamEvent = z.discriminatedUnion("type", [DeltaEvent, DoneEvent]);
export type DeltaEvent = z.infer<typeof DeltaEvent>;
export type DoneEvent = z.infer<typeof DoneEvent>;
export type StreamEvent = z.infer<typeof StreamEvent>;
