import { z } from "@hono/zod-openapi";
import type { ToolCall } from "../core/message";
import { messageText } from "../core/message";
import { type Adapter, joinUrl, type Target, tryJson, type WireRequest } from "./adapter";
import { parseNdjson } from "./ndjson";
import { SAMPLING_FIELDS } from "./openai-fields";
import { malformed, ProviderError, streamCut, unsupported } from "./provider-error";
import type { ChatMessage, ChatRequest, ChatResult, FinishReason, StreamEvent } from "./types";
import { randomHex } from "../core/encoding";

/** Ollama /api/chat: string content, base64 `images`, tool arguments as objects, NDJSON streaming. */

const DATA_URL = /^data:[^;,]+;base64,(.*)$/s;

function images(m: ChatMessage, target: Target): string[] {
  if (!Array.isArray(m.content)) return [];
  const out: string[] = [];
  for (const part of m.content) {
    if (part.type === "image_url") {
      const data = DATA_URL.exec(part.image_url.url);
      // Ollama does not fetch URLs: only inline images can be sent.
      if (!data) throw unsupported(target.name, "an image URL (Ollama needs base64 data URLs)");
      out.push(data[1]!);
    } else if (part.type === "input_audio") throw unsupported(target.name, "audio input");
    else if (part.type === "video_url") throw unsupported(target.name, "video input");
  }
  return out;
}

function parseArgs(args: string): unknown {
  if (args.trim() === "") return {};
  return tryJson(args) ?? { _raw_arguments: args };
}

function buildRequest(target: Target, req: ChatRequest, stream: boolean): WireRequest {
  const toolNames = new Map<string, string>();
  const messages = req.messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role === "developer" ? "system" : m.role, content: messageText(m.content) };
    const imgs = images(m, target);
    if (imgs.length > 0) out.images = imgs;
    if (m.tool_calls && m.tool_calls.length > 0) {
      for (const c of m.tool_calls) toolNames.set(c.id, c.function.name);
      out.tool_calls = m.tool_calls.map((c) => ({ function: { name: c.function.name, arguments: parseArgs(c.function.arguments) } }));
    }
    if (m.role === "tool") {
      // Ollama matches results by tool name, not by call id.
      const name = m.name ?? (m.tool_call_id !== undefined ? toolNames.get(m.tool_call_id) : undefined);
      if (name !== undefined) out.tool_name = name;
    }
    return out;
  });
  const body: Record<string, unknown> = { model: target.upstreamModel, messages, stream };
  if (req.tools && req.tools.length > 0 && req.tool_choice !== "none") body.tools = req.tools;
  const format = req.response_format;
  if (format?.type === "json_object") body.format = "json";
  else if (format?.type === "json_schema") {
    const schema = (format.json_schema as { schema?: unknown } | undefined)?.schema;
    if (schema !== undefined) body.format = schema;
  }
  const options: Record<string, unknown> = {};
  if (req.temperature !== undefined) options.temperature = req.temperature;
  if (req.top_p !== undefined) options.top_p = req.top_p;
  if (req.max_output_tokens !== undefined) options.num_predict = req.max_output_tokens;
  if (req.stop !== undefined) options.stop = typeof req.stop === "string" ? [req.stop] : req.stop;
  for (const k of SAMPLING_FIELDS) if (req[k] !== undefined) options[k] = req[k];
  if (Object.keys(options).length > 0) body.options = options;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  return { url: joinUrl(target.baseUrl, "/api/chat"), headers, body };
}

const WireToolCall = z.object({
  id: z.string().optional(),
  function: z.object({ name: z.string(), arguments: z.unknown() }),
});
const WireLine = z.object({
  model: z.string().optional(),
  message: z.object({ content: z.string().optional(), tool_calls: z.array(WireToolCall).nullable().optional() }).optional(),
  done: z.boolean().optional(),
  done_reason: z.string().optional(),
  prompt_eval_count: z.number().int().min(0).optional(),
  eval_count: z.number().int().min(0).optional(),
  error: z.string().optional(),
});
type WireLine = z.infer<typeof WireLine>;

// Ollama gives no call ids; callers need one to pair results with calls.
const newCallId = (): string => `call_${randomHex(12)}`;

function toToolCall(c: z.infer<typeof WireToolCall>): ToolCall {
  const args = typeof c.function.arguments === "string" ? c.function.arguments : JSON.stringify(c.function.arguments ?? {});
  return { id: c.id ?? newCallId(), type: "function", function: { name: c.function.name, arguments: args } };
}

function finishReason(line: WireLine, hasToolCalls: boolean): FinishReason {
  if (line.done_reason === "length") return "length";
  return hasToolCalls ? "tool_calls" : "stop";
}

const usageOf = (line: WireLine) =>
  line.prompt_eval_count !== undefined && line.eval_count !== undefined
    ? { prompt_tokens: line.prompt_eval_count, completion_tokens: line.eval_count }
    : undefined;

function upstreamError(target: Target, message: string): ProviderError {
  return new ProviderError("BEM-071", `Model '${target.name}': upstream reported an error`, { disposition: "retry", internal: message.slice(0, 300) });
}

function parseResponse(json: unknown, target: Target): ChatResult {
  const parsed = WireLine.safeParse(json);
  if (!parsed.success || !parsed.data.message) throw malformed(target.name, `ollama response: ${JSON.stringify(json).slice(0, 300)}`);
  const line = parsed.data;
  if (line.error) throw upstreamError(target, line.error);
  const toolCalls = (line.message?.tool_calls ?? []).map(toToolCall);
  const result: ChatResult = {
    message: { role: "assistant", content: line.message?.content ?? null },
    finish_reason: finishReason(line, toolCalls.length > 0),
    upstream_model: line.model ?? target.upstreamModel,
  };
  if (toolCalls.length > 0) result.message.tool_calls = toolCalls;
  const usage = usageOf(line);
  if (usage) result.usage = usage;
  return result;
}

async function* parseStream(chunks: AsyncIterable<Uint8Array>, target: Target): AsyncGenerator<StreamEvent> {
  let calls = 0;
  try {
    for await (const json of parseNdjson(chunks)) {
      const parsed = WireLine.safeParse(json);
      if (!parsed.success) throw malformed(target.name, `ollama line: ${JSON.stringify(json).slice(0, 300)}`);
      const line = parsed.data;
      if (line.error) throw upstreamError(target, line.error);
      const content = line.message?.content;
      const toolCalls = (line.message?.tool_calls ?? []).map((c) => {
        const call = toToolCall(c);
        return { index: calls++, id: call.id, name: call.function.name, arguments: call.function.arguments };
      });
      if (content || toolCalls.length > 0) {
        const event: StreamEvent = { type: "delta" };
        if (content) event.content = content;
        if (toolCalls.length > 0) event.tool_calls = toolCalls;
        yield event;
      }
      if (line.done) {
        yield { type: "done", finish_reason: finishReason(line, calls > 0), usage: usageOf(line), upstream_model: line.model ?? target.upstreamModel };
        return;
      }
    }
  } catch (e) {
    // A line cut in half is not JSON: that is a cut stream, not a protocol error.
    if (e instanceof SyntaxError) throw streamCut(target.name);
    throw e;
  }
  throw streamCut(target.name);
}

export const ollamaAdapter: Adapter = { buildRequest, parseResponse, parseStream };
