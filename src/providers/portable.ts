import type { Provider } from "../config/model-config";
import { type Content, type ContentPart, documentText, isServerToolBlock } from "../core/message";
import type { Target } from "./adapter";
import { OPENAI_FIELDS, OPENAI_ONLY_FIELDS } from "./openai-fields";
import { unsupported } from "./provider-error";
import type { ChatMessage, ChatRequest } from "./types";

/**
 * What a provider other than Anthropic is sent of Anthropic-only content (the Messages API's
 * extras): thinking blocks, server-tool blocks and cache breakpoints are dropped, the place of a
 * tool call among an assistant's text is lost (its calls follow its text), a document becomes its text when it
 * has one (plain text, or text content blocks) and is refused (BEM-079, so failover moves on)
 * when it has not (a PDF). The request's `anthropic` extras stay behind. Text-only content is sent
 * as one string (its parts a line apart), which every OpenAI-compatible server takes.
 */
export function portableRequest(req: ChatRequest, target: Target): ChatRequest {
  const { anthropic: _anthropicOnly, ...rest } = req;
  return { ...rest, messages: req.messages.map((m) => portableMessage(m, target)) };
}

function portablePart(part: ContentPart, target: Target): ContentPart[] {
  switch (part.type) {
    case "thinking":
    case "redacted_thinking":
    // The calls go as the message's tool_calls (their order among the text is not expressible there);
    // Anthropic's server-tool blocks have no equivalent elsewhere (droppedFor names them).
    case "tool_call":
    case "anthropic_block":
      return [];
    case "text":
      return [{ type: "text", text: part.text }];
    case "image_url":
      return [{ type: "image_url", image_url: part.image_url }];
    case "document": {
      const text = documentText(part) ?? contentDocumentText(part.document.source);
      if (text === undefined)
        throw unsupported(target.name, `a ${String(part.document.source.media_type ?? part.document.source.type)} document (only Anthropic models read those)`);
      const title = typeof part.document.title === "string" ? `${part.document.title}\n\n` : "";
      return [{ type: "text", text: `${title}${text}` }];
    }
    default:
      return [part];
  }
}

/** A `content` document source made of text blocks reads as their text. */
function contentDocumentText(source: Record<string, unknown>): string | undefined {
  if (source.type !== "content" || !Array.isArray(source.content)) return undefined;
  const blocks = source.content as { type?: unknown; text?: unknown }[];
  if (!blocks.every((b) => b.type === "text" && typeof b.text === "string")) return undefined;
  return blocks.map((b) => b.text).join("\n");
}

function portableContent(content: Content | null | undefined, target: Target): Content | null | undefined {
  if (!Array.isArray(content)) return content;
  const parts = content.flatMap((p) => portablePart(p, target));
  // Parts are separate blocks (as Anthropic reads them, and vLLM's templates join them): one line
  // apart, so a text and a document's text beside it do not run together ("hi" + "doc" read "hidoc").
  return parts.every((p) => p.type === "text") ? parts.map((p) => (p.type === "text" ? p.text : "")).join("\n") : parts;
}

function portableMessage(m: ChatMessage, target: Target): ChatMessage {
  const { is_error: _anthropicOnly, ...rest } = m;
  if (!Array.isArray(m.content)) return rest;
  return { ...rest, content: portableContent(m.content, target) };
}

/**
 * The most stop sequences a provider takes: OpenAI's and Groq's chat APIs refuse a fifth (400), while
 * Anthropic's Messages allows many (clients send up to 64). The rest are not sent, and the turn says so.
 */
const STOP_LIMIT: Partial<Record<Provider, number>> = { openai: 4, groq: 4 };

/** The stop sequences `provider` is sent: the first ones it takes. */
export function stopFor(provider: Provider, stop: ChatRequest["stop"]): ChatRequest["stop"] {
  const limit = STOP_LIMIT[provider];
  return limit !== undefined && Array.isArray(stop) && stop.length > limit ? stop.slice(0, limit) : stop;
}

/**
 * The parts of a request that `provider` does not get: Anthropic-only ones elsewhere, OpenAI's
 * own fields at Anthropic and Ollama (the turn's warnings and X-Edgeweave-Warnings name them; docs/reference/openai-fields.md lists them).
 * Anthropic takes safety_identifier as its metadata.user_id.
 */
export function droppedFor(
  provider: Provider,
  req: Pick<ChatRequest, "anthropic" | "stop" | (typeof OPENAI_FIELDS)[number]> & {
    messages: readonly { content?: Content | null; is_error?: boolean }[];
  },
): string[] {
  if (provider === "anthropic") return OPENAI_FIELDS.filter((k) => k !== "safety_identifier" && req[k] !== undefined);
  const out: string[] = provider === "ollama" ? OPENAI_ONLY_FIELDS.filter((k) => req[k] !== undefined) : [];
  const stops = Array.isArray(req.stop) ? req.stop.length : 0;
  const sent = stopFor(provider, req.stop);
  if (Array.isArray(sent) && sent.length < stops) out.push(`stop sequences after the first ${sent.length}`);
  const a = req.anthropic;
  if (a?.thinking !== undefined) out.push("thinking");
  if (a?.top_k !== undefined) out.push("top_k");
  if (a?.beta !== undefined) out.push("anthropic-beta");
  if (a?.server_tools?.length) out.push("server tools");
  if (a?.body && Object.keys(a.body).length > 0) out.push(...Object.keys(a.body));
  const parts = req.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  if (parts.some((p) => p.type === "thinking" || p.type === "redacted_thinking")) out.push("thinking blocks");
  const blocks = new Set(parts.flatMap((p) => (p.type === "anthropic_block" ? [p.block.type] : [])));
  if ([...blocks].some((t) => isServerToolBlock(t))) out.push("server tool blocks");
  // A type new to us (Anthropic added it after this release) is named, so the client sees what went missing.
  for (const t of blocks) if (!isServerToolBlock(t)) out.push(`${t} blocks`);
  if (parts.some((p) => p.type === "text" && p.citations !== undefined)) out.push("citations");
  if (a?.tool_cache_control || parts.some((p) => "cache_control" in p && p.cache_control !== undefined)) out.push("cache_control");
  if (req.messages.some((m) => m.is_error === true)) out.push("tool_result is_error");
  return out;
}
