import { z } from "@hono/zod-openapi";
import { type ContentPart, type Message, MessageId, type ParsedMessageInput, mediaUrl } from "../core/message";

/**
 * Messages between LangChain's shape (what LangGraph's SDK, useStream and Agent Chat UI send and read:
 * `type` human | ai | tool | system, `tool_calls` with parsed `args`) and edgeweave's stored messages
 * (OpenAI roles, tool calls with JSON `arguments`). A client may also send OpenAI's `{role, content}`.
 */

const TYPE_TO_ROLE = { human: "user", user: "user", ai: "assistant", assistant: "assistant", tool: "tool", system: "system", developer: "system" } as const;
const ROLE_TO_TYPE = { user: "human", assistant: "ai", tool: "tool", system: "system" } as const;

/** A content block as LangChain clients send it: text, an image link, or a base64 image (v0 `source_type` or v1 fields). */
const Block = z.union([
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("image_url"), image_url: z.union([mediaUrl("image"), z.object({ url: mediaUrl("image") })]) }),
  z.object({
    type: z.literal("image"),
    data: z
      .string()
      .max(2_000_000)
      .regex(/^[A-Za-z0-9+/]*={0,2}$/),
    mime_type: z
      .string()
      .regex(/^image\/[A-Za-z0-9.+-]+$/)
      .optional(),
    mimeType: z
      .string()
      .regex(/^image\/[A-Za-z0-9.+-]+$/)
      .optional(),
    source_type: z.literal("base64").optional(),
  }),
  z.object({ type: z.literal("image"), url: mediaUrl("image") }),
]);

const ToolCallIn = z.object({ id: z.string().min(1).max(256), name: z.string().min(1).max(128), args: z.record(z.string(), z.unknown()).default({}) });

export const LangChainMessage = z
  .object({
    type: z.enum(["human", "user", "ai", "assistant", "tool", "system", "developer"]).optional(),
    role: z.enum(["user", "assistant", "tool", "system", "developer"]).optional(),
    id: MessageId.optional(),
    content: z
      .union([z.string(), z.array(Block).max(1000)])
      .nullable()
      .default(""),
    name: z.string().max(128).optional(),
    tool_calls: z.array(ToolCallIn).max(128).optional(),
    tool_call_id: z.string().max(256).optional(),
    status: z.enum(["success", "error"]).optional(),
  })
  .refine((m) => (m.type ?? m.role) !== undefined, { message: "a message needs its `type` (human, ai, tool, system) or `role`" })
  .refine((m) => (m.type ?? m.role) !== "tool" || m.tool_call_id !== undefined, { message: "a tool message needs its tool_call_id" })
  .openapi("LangChainMessage", { description: "A message in LangChain's shape (`type`), or OpenAI's (`role`)" });
export type LangChainMessage = z.infer<typeof LangChainMessage>;

function partOf(b: z.infer<typeof Block>): ContentPart {
  if (b.type === "text") return { type: "text", text: b.text };
  if (b.type === "image_url") return { type: "image_url", image_url: { url: typeof b.image_url === "string" ? b.image_url : b.image_url.url } };
  if ("url" in b) return { type: "image_url", image_url: { url: b.url } };
  return { type: "image_url", image_url: { url: `data:${b.mime_type ?? b.mimeType ?? "image/png"};base64,${b.data}` } };
}

/** A client's message as the turn's input. */
export function toInput(m: LangChainMessage): ParsedMessageInput {
  const role = TYPE_TO_ROLE[(m.type ?? m.role)!];
  return {
    role,
    content: m.content === null || typeof m.content === "string" ? m.content : m.content.map(partOf),
    ...(m.id !== undefined ? { id: m.id } : {}),
    ...(m.name !== undefined ? { name: m.name } : {}),
    ...(m.tool_calls?.length
      ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: JSON.stringify(c.args) } })) }
      : {}),
    ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
    ...(m.status === "error" ? { is_error: true } : {}),
  };
}

/** A tool call's arguments as an object (LangChain's `args`); text that is not a JSON object stays whole under `input`. */
export function argsOf(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json || "{}");
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // not JSON: kept as text below
  }
  return { input: json };
}

/** Content as LangChain reads it: a string, or blocks (a tool_call part only places a call, so it is left out). */
function contentOf(content: Message["content"]): string | Record<string, unknown>[] {
  if (content === null) return "";
  if (typeof content === "string") return content;
  const parts = content.filter((p) => p.type !== "tool_call");
  if (parts.every((p) => p.type === "text")) return parts.map((p) => (p.type === "text" ? p.text : "")).join("");
  return parts.map((p) => (p.type === "anthropic_block" ? p.block : { ...p }));
}

/** A stored message in LangChain's shape. */
export function toLangChain(m: Message): Record<string, unknown> {
  const base = {
    type: ROLE_TO_TYPE[m.role],
    id: m.id,
    content: contentOf(m.content),
    additional_kwargs: {},
    response_metadata: {},
    ...(m.name ? { name: m.name } : {}),
  };
  if (m.role === "assistant") {
    return {
      ...base,
      tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: argsOf(c.function.arguments), type: "tool_call" })),
      invalid_tool_calls: [],
      ...(m.metadata?.model !== undefined ? { response_metadata: { model_name: m.metadata.model, finish_reason: m.metadata.finish_reason } } : {}),
    };
  }
  if (m.role === "tool") return { ...base, tool_call_id: m.tool_call_id ?? "", status: m.is_error ? "error" : "success" };
  return base;
}
