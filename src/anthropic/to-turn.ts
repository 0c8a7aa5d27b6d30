import type { ContentPart, ParsedMessageInput } from "../core/message";
import { assistantTurn, textPart } from "../providers/anthropic-blocks";
import type { AnthropicExtras, ChatRequest, FunctionTool, ToolChoice } from "../providers/types";
import type { ContentBlock, MessageParam, MessagesRequest } from "./schema";
import { EXTENSION_FIELDS, isKnownBlock, KNOWN_FIELDS } from "./schema";

/**
 * An Anthropic Messages request → the turn's messages and provider parameters (pure). Every
 * block keeps what an Anthropic upstream needs to get it back unchanged: cache breakpoints,
 * document fields, thinking signatures; other providers get what they can take
 * (providers/portable.ts). Tool results become tool messages ahead of the user's other blocks,
 * as Anthropic orders them.
 */
export type TurnParts = { messages: ParsedMessageInput[]; params: Omit<ChatRequest, "messages"> };

/** The anthropic-* request headers, forwarded unchanged to an Anthropic upstream. */
export type AnthropicHeaders = { version?: string; beta?: string };

type Part = ContentPart;

function imagePart(b: Extract<ContentBlock, { type: "image" }>): Part {
  const url = b.source.type === "base64" ? `data:${b.source.media_type};base64,${b.source.data}` : b.source.url;
  return { type: "image_url", image_url: { url }, ...(b.cache_control ? { cache_control: b.cache_control } : {}) };
}

function documentPart(b: Extract<ContentBlock, { type: "document" }>): Part {
  const { type: _type, cache_control, ...document } = b;
  return { type: "document", document, ...(cache_control ? { cache_control } : {}) };
}

/** A user or tool_result block that is content (not a tool_use/tool_result). */
function contentPart(b: ContentBlock): Part | undefined {
  switch (b.type) {
    case "text":
      return textPart(b);
    case "image":
      return imagePart(b);
    case "document":
      return documentPart(b);
    case "thinking":
      return { type: "thinking", thinking: b.thinking, signature: b.signature };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: b.data };
    case "tool_use":
    case "tool_result":
      return undefined;
    default:
      return { type: "anthropic_block", block: b };
  }
}

function userMessages(m: Extract<MessageParam, { role: "user" }>): ParsedMessageInput[] {
  if (typeof m.content === "string") return [{ role: "user", content: m.content }];
  const out: ParsedMessageInput[] = [];
  const parts: Part[] = [];
  for (const b of m.content) {
    if (b.type === "tool_result") {
      const content: ParsedMessageInput["content"] =
        b.content === undefined ? "" : typeof b.content === "string" ? b.content : b.content.flatMap((c) => contentPart(c) ?? []);
      // The block's own breakpoint rides on its last part (providers/anthropic.ts puts it back on the block).
      if (b.cache_control && Array.isArray(content) && content.length > 0) {
        const last = content[content.length - 1]!;
        if (last.type === "text" || last.type === "image_url" || last.type === "document")
          content[content.length - 1] = { ...last, cache_control: b.cache_control };
      }
      const asParts = b.cache_control && typeof content === "string" ? [{ type: "text" as const, text: content, cache_control: b.cache_control }] : content;
      out.push({ role: "tool", tool_call_id: b.tool_use_id, content: asParts, ...(b.is_error ? { is_error: true } : {}) });
    } else if (b.type !== "tool_use") {
      const p = contentPart(b);
      if (p) parts.push(p);
    }
  }
  if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

/**
 * An assistant turn: the one reading of its blocks a reply from Anthropic gets too (providers/anthropic-blocks.ts).
 * A block of a type new to us is kept whole, as a server-tool block is.
 */
function assistantMessage(m: Extract<MessageParam, { role: "assistant" }>): ParsedMessageInput {
  if (typeof m.content === "string") return { role: "assistant", content: m.content };
  return { role: "assistant", ...assistantTurn(m.content, (b) => (isKnownBlock(b) ? contentPart(b) : { type: "anthropic_block", block: b })) };
}

function systemMessage(system: MessagesRequest["system"]): ParsedMessageInput[] {
  if (system === undefined || system === "" || (Array.isArray(system) && system.length === 0)) return [];
  return [{ role: "system", content: typeof system === "string" ? system : system.map(textPart) }];
}

function toolChoice(c: MessagesRequest["tool_choice"]): { tool_choice?: ToolChoice; parallel_tool_calls?: boolean } {
  if (!c) return {};
  const parallel = "disable_parallel_tool_use" in c && c.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  if (c.type === "auto") return { tool_choice: "auto", ...parallel };
  if (c.type === "any") return { tool_choice: "required", ...parallel };
  if (c.type === "none") return { tool_choice: "none" };
  return { tool_choice: { type: "function", function: { name: c.name } }, ...parallel };
}

export function messagesToTurn(body: MessagesRequest, headers: AnthropicHeaders = {}): TurnParts {
  const messages: ParsedMessageInput[] = [...systemMessage(body.system)];
  for (const m of body.messages) {
    if (m.role === "user") messages.push(...userMessages(m));
    else if (m.role === "assistant") messages.push(assistantMessage(m));
    else messages.push({ role: "system", content: typeof m.content === "string" ? m.content : m.content.flatMap((b) => contentPart(b) ?? []) });
  }

  const clientTools = (body.tools ?? []).filter((t) => t.type === undefined || t.type === "custom");
  const tools: FunctionTool[] = clientTools.map((t) => ({
    type: "function",
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.input_schema ?? { type: "object", properties: {} },
    },
  }));
  const serverTools = (body.tools ?? []).filter((t) => !(t.type === undefined || t.type === "custom"));
  const cachedTool = clientTools.findIndex((t) => t.cache_control !== undefined);

  const passthrough = Object.fromEntries(Object.entries(body).filter(([k]) => !KNOWN_FIELDS.has(k) && !EXTENSION_FIELDS.has(k)));
  const anthropic: AnthropicExtras = {
    ...(headers.version !== undefined ? { version: headers.version } : {}),
    ...(headers.beta !== undefined ? { beta: headers.beta } : {}),
    ...(body.thinking !== undefined ? { thinking: body.thinking } : {}),
    ...(body.top_k !== undefined ? { top_k: body.top_k } : {}),
    ...(serverTools.length > 0 ? { server_tools: serverTools } : {}),
    ...(cachedTool >= 0 ? { tool_cache_control: { index: cachedTool, cache_control: clientTools[cachedTool]!.cache_control! } } : {}),
    ...(Object.keys(passthrough).length > 0 ? { body: passthrough } : {}),
  };

  const params: TurnParts["params"] = {
    max_output_tokens: body.max_tokens,
    ...(tools.length > 0 ? { tools } : {}),
    ...toolChoice(body.tool_choice),
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
    ...(body.top_p !== undefined ? { top_p: body.top_p } : {}),
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences } : {}),
    ...(body.metadata?.user_id ? { user: body.metadata.user_id } : {}),
    ...(Object.keys(anthropic).length > 0 ? { anthropic } : {}),
  };
  return { messages, params };
}
