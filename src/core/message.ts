import { z } from "@hono/zod-openapi";
import { DOT_SEGMENT_MESSAGE, isDotSegment } from "./path-segment";

/**
 * Anthropic's prompt-cache breakpoint on a block (Messages API). Kept with the part so it reaches an
 * Anthropic upstream where the client put it; other providers never see it (providers/portable.ts).
 */
export const CacheControl = z.object({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).optional() });
export type CacheControl = z.infer<typeof CacheControl>;

/**
 * An Anthropic text block's citations (web search results, document spans), kept with the text so an
 * Anthropic upstream gets them back as it wrote them; other providers get the text alone (providers/portable.ts).
 */
export const Citations = z.array(z.looseObject({ type: z.string().max(64) })).max(10_000);
/** Content parts in the OpenAI style; providers map them to their own wire formats. */
export const TextPart = z.object({ type: z.literal("text"), text: z.string(), cache_control: CacheControl.optional(), citations: Citations.optional() });
export const ImagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.object({ url: z.string().max(2_000_000), detail: z.enum(["auto", "low", "high"]).optional() }),
  cache_control: CacheControl.optional(),
});
/**
 * An Anthropic `document` block (PDF, plain text, or content blocks), kept as the client sent it
 * (`source`, `title`, `context`, `citations`): Anthropic upstreams get it unchanged, others the text
 * when that is faithful (providers/portable.ts) and BEM-079 otherwise.
 */
export const DocumentPart = z.object({
  type: z.literal("document"),
  document: z.looseObject({ source: z.looseObject({ type: z.string().max(32) }) }),
  cache_control: CacheControl.optional(),
});
/** An Anthropic extended-thinking block of an assistant turn; its signature must reach Anthropic unchanged. */
export const ThinkingPart = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() });
export const RedactedThinkingPart = z.object({ type: z.literal("redacted_thinking"), data: z.string() });
export const AudioPart = z.object({
  type: z.literal("input_audio"),
  input_audio: z.object({ data: z.string(), format: z.string().max(16) }),
});
export const VideoPart = z.object({ type: z.literal("video_url"), video_url: z.object({ url: z.string() }) });

/**
 * A media link as a client sends it: an http(s) URL, which the provider fetches, or a base64 `data:`
 * URL of the part's kind, which is what a provider can be sent inline (Anthropic takes either, Ollama
 * base64 only). Any other scheme was passed on as sent: a `file:` URL to a custom OpenAI-compatible
 * server that reads local media, or a link every provider refuses, on each later turn of the thread.
 * Client parts only: stored messages keep what they hold.
 */
export const mediaUrl = (kind: "image" | "video") => {
  const inline = new RegExp(`^data:${kind}/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/]*={0,2}$`);
  return z
    .string()
    .max(2_000_000)
    .refine((url) => (/^https?:\/\//i.test(url) && URL.canParse(url)) || inline.test(url), {
      message: `an ${kind} URL must be an https (or http) link or a base64 data:${kind}/… URL`,
    });
};
const ClientImagePart = ImagePart.extend({ image_url: ImagePart.shape.image_url.extend({ url: mediaUrl("image") }) });
const ClientVideoPart = VideoPart.extend({ video_url: z.object({ url: mediaUrl("video") }) });
/**
 * Where one of the message's `tool_calls` (by id) sits among its parts: Anthropic's assistant turns
 * interleave text and tool_use blocks (text after a call, a call between two texts), and may put a
 * cache breakpoint on a tool_use. Kept only when the order or the breakpoint needs it; an Anthropic
 * upstream gets the blocks in this order, others the text and the calls apart (providers/portable.ts).
 */
export const ToolCallPart = z.object({ type: z.literal("tool_call"), id: z.string().min(1).max(256), cache_control: CacheControl.optional() });
/** The results of Anthropic's server tools (each answers a server_tool_use by its tool_use_id). */
const SERVER_TOOL_RESULTS = [
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
] as const;
/** Every server-tool block type (a block of another type a client sends is one Anthropic added after this release, anthropic/schema.ts). */
export const SERVER_TOOL_BLOCKS = ["server_tool_use", ...SERVER_TOOL_RESULTS, "container_upload", "mcp_tool_use", "mcp_tool_result"] as const;
/** Whether a block type is one of Anthropic's server-tool blocks this release knows (else: a type newer than it). */
export const isServerToolBlock = (type: string): boolean => (SERVER_TOOL_BLOCKS as readonly string[]).includes(type);
const BlockId = z.string().min(1).max(256);
const BlockCache = { cache_control: CacheControl.nullish() };
/**
 * One of Anthropic's server-tool blocks (its API reference: the tool ran on Anthropic's side, its
 * result is in the turn; an upload names a file for its code execution). The fields Anthropic's API
 * requires of its kind are checked (a use's id, name and input; a result's tool_use_id and content;
 * an upload's file_id; a breakpoint's shape). A client's block is stored and replayed to Anthropic
 * on every later turn of its thread, so one Anthropic would refuse is refused when it comes in
 * (400 BEM-011) rather than kept to fail each of those turns.
 */
const ServerToolFields = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("server_tool_use"), id: BlockId, name: BlockId, input: z.record(z.string(), z.unknown()), ...BlockCache }),
  z.looseObject({
    type: z.literal("mcp_tool_use"),
    id: BlockId,
    name: BlockId,
    server_name: BlockId,
    input: z.record(z.string(), z.unknown()),
    ...BlockCache,
  }),
  z.looseObject({
    type: z.enum(SERVER_TOOL_RESULTS),
    tool_use_id: BlockId,
    content: z.union([z.string(), z.array(z.unknown()), z.record(z.string(), z.unknown())]),
    ...BlockCache,
  }),
  z.looseObject({ type: z.literal("mcp_tool_result"), tool_use_id: BlockId, ...BlockCache }),
  z.looseObject({ type: z.literal("container_upload"), file_id: BlockId, ...BlockCache }),
]);
/**
 * A block of an Anthropic conversation that no other part models, kept whole: a server-tool block (a web
 * search and its results, …: a ServerToolBlock from a client) or a block type we do not know yet, from an Anthropic
 * upstream's reply or a client's assistant turn (anthropic/schema.ts). An Anthropic upstream (and client) gets
 * it unchanged; others cannot take it and get the turn without it, with a warning (providers/portable.ts).
 */
export const AnthropicBlockPart = z.object({ type: z.literal("anthropic_block"), block: z.looseObject({ type: z.string().min(1).max(64) }) });
/**
 * A server-tool block as a client sends it: checked against ServerToolFields, kept as sent (its keys in
 * their order, type first, as a reply's block is kept: the stored reply and the client's resent copy hash alike).
 */
export const ServerToolBlock = z.looseObject({ type: z.enum(SERVER_TOOL_BLOCKS) }).superRefine((block, ctx) => {
  const checked = ServerToolFields.safeParse(block);
  for (const issue of checked.error?.issues ?? []) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
});
/** An anthropic_block as a client sends it (chat, invoke): a ServerToolBlock, not any type a reply may have had. */
const ClientAnthropicBlockPart = z.object({ type: z.literal("anthropic_block"), block: ServerToolBlock });
const PARTS = [TextPart, ImagePart, AudioPart, VideoPart, DocumentPart, ThinkingPart, RedactedThinkingPart, ToolCallPart] as const;
export const ContentPart = z.discriminatedUnion("type", [...PARTS, AnthropicBlockPart]);
export type ContentPart = z.infer<typeof ContentPart>;
/** The parts a client may send: ContentPart, with media links held to mediaUrl and an anthropic_block to ServerToolBlock. */
export const ClientContentPart = z.discriminatedUnion("type", [
  TextPart,
  ClientImagePart,
  AudioPart,
  ClientVideoPart,
  DocumentPart,
  ThinkingPart,
  RedactedThinkingPart,
  ToolCallPart,
  ClientAnthropicBlockPart,
]);
export type ClientContentPart = z.infer<typeof ClientContentPart>;

/**
 * Parts only an assistant turn carries: its reasoning (thinking, redacted_thinking), the place of one
 * of its own tool_calls (tool_call) and Anthropic's server-tool blocks, which are the model's (all but
 * container_upload, a user's file for code execution). Elsewhere no provider takes them: a tool_call
 * part was dropped without a word, a thinking block in a user turn failed at Anthropic. Each such part
 * is a coded 400 naming it (BEM-011), and so is an assistant's tool_call part naming no call of its own.
 */
export function checkPartsForRole(
  m: { role: string; content?: unknown; tool_calls?: readonly { id: string }[] },
  ctx: z.RefinementCtx,
  path: (string | number)[] = ["content"],
): void {
  if (!Array.isArray(m.content)) return;
  const calls = new Set((m.tool_calls ?? []).map((c) => c.id));
  (m.content as ClientContentPart[]).forEach((part, i) => {
    const assistantOnly =
      part.type === "thinking" ||
      part.type === "redacted_thinking" ||
      part.type === "tool_call" ||
      (part.type === "anthropic_block" && part.block.type !== "container_upload");
    const kind = part.type === "anthropic_block" ? `an anthropic_block of type ${part.block.type}` : `a ${part.type} part`;
    if (assistantOnly && m.role !== "assistant")
      ctx.addIssue({ code: "custom", path: [...path, i], message: `${kind} belongs to an assistant turn, not a ${m.role} turn` });
    else if (part.type === "tool_call" && !calls.has(part.id))
      ctx.addIssue({
        code: "custom",
        path: [...path, i],
        message: `a tool_call part names '${part.id.slice(0, 80)}', which is not one of this message's tool_calls`,
      });
  });
}

export const Content = z.union([z.string(), z.array(ContentPart)]);
export type Content = z.infer<typeof Content>;
export const ClientContent = z.union([z.string(), z.array(ClientContentPart)]);

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

/** Tool calls one message may hold (a model reply with more is refused before any runs: pipeline/tools/loop.ts). */
export const MAX_TOOL_CALLS = 128;

/** A message as a client may send it: id and created_at are assigned when absent. */
export const MessageInput = z.object({
  id: MessageId.optional(),
  role: Role,
  content: Content.nullable().default(""),
  name: z.string().max(128).optional(),
  tool_calls: z.array(ToolCall).max(MAX_TOOL_CALLS).optional(),
  tool_call_id: z.string().max(256).optional(),
  /** A tool result that reports a failure (Anthropic's tool_result `is_error`). */
  is_error: z.boolean().optional(),
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

/** The text a document part carries when it is plain text (`source.type` "text"), else undefined. */
export function documentText(part: z.infer<typeof DocumentPart>): string | undefined {
  const source = part.document.source;
  return source.type === "text" && typeof source.data === "string" ? source.data : undefined;
}
