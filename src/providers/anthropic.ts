import { z } from "@hono/zod-openapi";
import type { ContentPart } from "../core/message";
import { messageText } from "../core/message";
import { type Adapter, joinUrl, type Target, tryJson, type WireRequest } from "./adapter";
import { ANTHROPIC_VERSION, DEFAULT_ANTHROPIC_MAX_TOKENS } from "./defaults";
import { malformed, ProviderError, streamCut, unsupported } from "./provider-error";
import { parseSse } from "./sse";
import type { ChatMessage, ChatRequest, ChatResult, FinishReason, StreamEvent, ToolChoice, Usage } from "./types";

/** Anthropic Messages API: system split out, content blocks, tool_use / tool_result. */

type Block = Record<string, unknown>;
type WireMessage = { role: "user" | "assistant"; content: Block[] };

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function imageBlock(url: string, target: Target): Block {
  const data = DATA_URL.exec(url);
  if (data) return { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  throw unsupported(target.name, "an image that is neither a base64 data URL nor an http(s) URL");
}

function contentBlocks(content: ChatMessage["content"], target: Target): Block[] {
  if (content == null) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch is exhaustive over ContentPart (tsc checks it); the other arms throw
  return content.flatMap((part: ContentPart): Block[] => {
    switch (part.type) {
      case "text":
        // Anthropic rejects empty text blocks.
        return part.text === "" ? [] : [{ type: "text", text: part.text }];
      case "image_url":
        return [imageBlock(part.image_url.url, target)];
      case "input_audio":
        throw unsupported(target.name, "audio input");
      case "video_url":
        throw unsupported(target.name, "video input");
    }
  });
}

/** Tool arguments are a JSON string in OpenAI style but an object in Anthropic's tool_use.input. */
function toolInput(args: string): Record<string, unknown> {
  if (args.trim() === "") return {};
  const parsed = tryJson(args);
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  // Keep what the model produced rather than dropping it silently.
  return { _raw_arguments: args };
}

function toWire(messages: ChatMessage[], target: Target): { system: string[]; messages: WireMessage[] } {
  const system: string[] = [];
  const out: WireMessage[] = [];
  const push = (role: WireMessage["role"], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    // The API wants alternating roles: consecutive same-role messages merge into one.
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case "system":
      case "developer": {
        const text = messageText(m.content);
        if (text !== "") system.push(text);
        break;
      }
      case "user":
        push("user", contentBlocks(m.content, target));
        break;
      case "assistant": {
        const blocks = contentBlocks(m.content, target);
        for (const call of m.tool_calls ?? []) {
          blocks.push({ type: "tool_use", id: call.id, name: call.function.name, input: toolInput(call.function.arguments) });
        }
        push("assistant", blocks);
        break;
      }
      case "tool":
        push("user", [{ type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: messageText(m.content) }]);
        break;
    }
  }
  return { system, messages: out };
}

function toolChoice(choice: ToolChoice | undefined, parallel: boolean | undefined): Block | undefined {
  let out: Block | undefined;
  if (choice === "auto") out = { type: "auto" };
  else if (choice === "required") out = { type: "any" };
  else if (choice === "none") out = { type: "none" };
  else if (choice) out = { type: "tool", name: choice.function.name };
  if (parallel === false && out?.type !== "none") out = { ...(out ?? { type: "auto" }), disable_parallel_tool_use: true };
  return out;
}

function buildRequest(target: Target, req: ChatRequest, stream: boolean): WireRequest {
  const { system, messages } = toWire(req.messages, target);
  const body: Record<string, unknown> = {
    model: target.upstreamModel,
    max_tokens: req.max_output_tokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    messages,
  };
  if (system.length > 0) body.system = system.join("\n\n");
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools.map((t) => {
      const tool: Block = { name: t.function.name, input_schema: t.function.parameters ?? { type: "object", properties: {} } };
      if (t.function.description !== undefined) tool.description = t.function.description;
      return tool;
    });
    const choice = toolChoice(req.tool_choice, req.parallel_tool_calls);
    if (choice) body.tool_choice = choice;
  }
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (req.stop !== undefined) body.stop_sequences = typeof req.stop === "string" ? [req.stop] : req.stop;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  if (stream) body.stream = true;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "anthropic-version": ANTHROPIC_VERSION,
  };
  if (target.apiKey) headers["x-api-key"] = target.apiKey;
  return { url: joinUrl(target.baseUrl, "/messages"), headers, body };
}

export function mapStopReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      // end_turn, stop_sequence, pause_turn
      return "stop";
  }
}

const WireUsage = z.object({
  input_tokens: z.number().int().min(0).optional(),
  output_tokens: z.number().int().min(0).optional(),
  cache_creation_input_tokens: z.number().int().min(0).nullable().optional(),
  cache_read_input_tokens: z.number().int().min(0).nullable().optional(),
});
type WireUsage = z.infer<typeof WireUsage>;

// Cached prompt tokens are still prompt tokens for the caller's accounting.
const promptTokens = (u: WireUsage): number => (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);

const WireBlock = z.union([
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.unknown() }),
  z.object({ type: z.string() }),
]);
const WireResponse = z.object({
  model: z.string().optional(),
  content: z.array(WireBlock),
  stop_reason: z.string().nullable().optional(),
  usage: WireUsage.optional(),
});

function parseResponse(json: unknown, target: Target): ChatResult {
  const parsed = WireResponse.safeParse(json);
  if (!parsed.success) throw malformed(target.name, `anthropic response: ${parsed.error.message.slice(0, 300)}`);
  let text = "";
  let sawText = false;
  const toolCalls: NonNullable<ChatResult["message"]["tool_calls"]> = [];
  for (const block of parsed.data.content) {
    if ("text" in block) {
      text += block.text;
      sawText = true;
    } else if ("input" in block && "id" in block) {
      toolCalls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const result: ChatResult = {
    message: { role: "assistant", content: sawText ? text : null },
    finish_reason: mapStopReason(parsed.data.stop_reason),
    upstream_model: parsed.data.model ?? target.upstreamModel,
  };
  if (toolCalls.length > 0) result.message.tool_calls = toolCalls;
  const u = parsed.data.usage;
  if (u && u.input_tokens !== undefined && u.output_tokens !== undefined) {
    result.usage = { prompt_tokens: promptTokens(u), completion_tokens: u.output_tokens };
  }
  return result;
}

const WireEvent = z.object({
  type: z.string(),
  index: z.number().int().min(0).optional(),
  message: z.object({ model: z.string().optional(), usage: WireUsage.optional() }).optional(),
  content_block: z.object({ type: z.string(), id: z.string().optional(), name: z.string().optional() }).optional(),
  delta: z
    .object({
      type: z.string().optional(),
      text: z.string().optional(),
      partial_json: z.string().optional(),
      stop_reason: z.string().nullable().optional(),
    })
    .optional(),
  usage: WireUsage.optional(),
  error: z.object({ type: z.string(), message: z.string().optional() }).optional(),
});

async function* parseStream(chunks: AsyncIterable<Uint8Array>, target: Target): AsyncGenerator<StreamEvent> {
  let model = target.upstreamModel;
  let stop: string | null | undefined;
  let input: WireUsage = {};
  let output: number | undefined;
  // Anthropic numbers all content blocks; OpenAI-style deltas number tool calls only.
  const toolIndex = new Map<number, { index: number; sentArgs: boolean }>();
  for await (const sse of parseSse(chunks)) {
    const parsed = WireEvent.safeParse(tryJson(sse.data));
    if (!parsed.success) throw malformed(target.name, `anthropic event: ${sse.data.slice(0, 300)}`);
    const ev = parsed.data;
    switch (ev.type) {
      case "message_start":
        if (ev.message?.model) model = ev.message.model;
        if (ev.message?.usage) input = ev.message.usage;
        break;
      case "content_block_start":
        if (ev.content_block?.type === "tool_use" && ev.index !== undefined) {
          const index = toolIndex.size;
          toolIndex.set(ev.index, { index, sentArgs: false });
          yield { type: "delta", tool_calls: [{ index, id: ev.content_block.id ?? "", name: ev.content_block.name ?? "", arguments: "" }] };
        }
        break;
      case "content_block_delta":
        if (ev.delta?.type === "text_delta" && ev.delta.text) {
          yield { type: "delta", content: ev.delta.text };
        } else if (ev.delta?.type === "input_json_delta" && ev.delta.partial_json && ev.index !== undefined) {
          const tool = toolIndex.get(ev.index);
          if (tool) {
            tool.sentArgs = true;
            yield { type: "delta", tool_calls: [{ index: tool.index, arguments: ev.delta.partial_json }] };
          }
        }
        break;
      case "content_block_stop": {
        const tool = ev.index === undefined ? undefined : toolIndex.get(ev.index);
        // A tool called with no arguments streams no JSON; OpenAI-style callers expect "{}".
        if (tool && !tool.sentArgs) yield { type: "delta", tool_calls: [{ index: tool.index, arguments: "{}" }] };
        break;
      }
      case "message_delta":
        if (ev.delta?.stop_reason !== undefined) stop = ev.delta.stop_reason;
        if (ev.usage?.output_tokens !== undefined) output = ev.usage.output_tokens;
        if (ev.usage?.input_tokens !== undefined) input = { ...input, ...ev.usage };
        break;
      case "message_stop": {
        const usage: Usage | undefined =
          input.input_tokens !== undefined && output !== undefined ? { prompt_tokens: promptTokens(input), completion_tokens: output } : undefined;
        yield { type: "done", finish_reason: mapStopReason(stop), usage, upstream_model: model };
        return;
      }
      case "error":
        throw new ProviderError("BEM-071", `Model '${target.name}': upstream reported an error mid-stream`, {
          disposition: "retry",
          internal: `${ev.error?.type ?? "error"}: ${(ev.error?.message ?? "").slice(0, 300)}`,
        });
      default:
        // ping and future event types carry nothing we need.
        break;
    }
  }
  throw streamCut(target.name);
}

export const anthropicAdapter: Adapter = { buildRequest, parseResponse, parseStream };
