import { z } from "@hono/zod-openapi";
import { DOT_SEGMENT_MESSAGE, isDotSegment } from "./path-segment";

/** Content parts in the OpenAI style; providers map them to their own wire formats. */
export const TextPart = z.object({ type: z.literal("text"), text: z.string() });
export const ImagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.object({ url: z.string().max(2_000_000), detail: z.enum(["auto", "low", "high"]).optional() }),
});
export const AudioPart = z.object({
  type: z.literal("input_audio"),
  input_audio: z.object({ data: z.string(), format: z.string().max(16) }),
});
export const VideoPart = z.object({ type: z.literal("video_url"), video_url: z.object({ url: z.string() }) });
export const ContentPart = z.discriminatedUnion("type", [TextPart, ImagePart, AudioPart, VideoPart]);
export type ContentPart = z.infer<typeof ContentPart>;

export const Content = z.union([z.string(), z.array(ContentPart)]);
export type Content = z.infer<typeof Content>;

export const ToolCall = z.object({
  id: z.string().min(1).max(256),
  type: z.literal("function").default("function"),
  function: z.object({ name: z.string().min(1).max(128), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const Role = z.enum(["system", "user", "assistant", "tool"]);
export type Role = z.infer<typeof Role>;

export const MessageId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/)
  .refine((id) => !isDotSegment(id), DOT_SEGMENT_MESSAGE);

/** A message as a client may send it: id and created_at are assigned when absent. */
export const MessageInput = z.object({
  id: MessageId.optional(),
  role: Role,
  content: Content.nullable().default(""),
  name: z.string().max(128).optional(),
  tool_calls: z.array(ToolCall).max(128).optional(),
  tool_call_id: z.string().max(256).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type MessageInput = z.input<typeof MessageInput>;
/** A client message once its schema parsed it: `content` present (null when empty), every tool call typed `function`. */
export type ParsedMessageInput = z.output<typeof MessageInput>;

/** A stored message. */
export const Message = MessageInput.extend({
  id: MessageId,
  content: Content.nullable(),
  created_at: z.number().int(),
});
export type Message = z.infer<typeof Message>;

/** The plain text of a message's content (parts joined), for estimates and summaries. */
export function messageText(content: Content | null | undefined): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.map((p) => (p.type === "text" ? p.text : "")).join("");
}
