import { z } from "@hono/zod-openapi";
import { type Adapter, joinUrl, type Target, tryJson, type WireRequest } from "./adapter";
import { malformed, ProviderError, streamCut } from "./provider-error";
import { stopFor } from "./portable";
import { OPENAI_FIELDS } from "./openai-fields";
import { parseSse } from "./sse";
import type { ChatMessage, ChatRequest, ChatResult, FinishReason, StreamEvent, ToolCallDelta, Usage } from "./types";

/** OpenAI Chat Completions, shared by openai, groq, nvidia and custom (vLLM, llama.cpp, LM Studio, the offline model). */

function wireMessage(m: ChatMessage, target: Target): Record<string, unknown> {
  // "developer" is OpenAI's newer name for system; other OpenAI-compatible servers only know "system".
  const role = m.role === "developer" && target.provider !== "openai" ? "system" : m.role;
  const out: Record<string, unknown> = { role, content: m.content ?? (m.role === "assistant" ? null : "") };
  if (m.name !== undefined) out.name = m.name;
  if (m.tool_calls && m.tool_calls.length > 0) out.tool_calls = m.tool_calls;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}

function buildRequest(target: Target, req: ChatRequest, stream: boolean): WireRequest {
  const body: Record<string, unknown> = { model: target.upstreamModel, messages: req.messages.map((m) => wireMessage(m, target)) };
  if (req.tools && req.tools.length > 0) {
    body.tools = req.tools;
    if (req.tool_choice !== undefined) body.tool_choice = req.tool_choice;
    if (req.parallel_tool_calls !== undefined) body.parallel_tool_calls = req.parallel_tool_calls;
  }
  if (req.response_format !== undefined) body.response_format = req.response_format;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.top_p !== undefined) body.top_p = req.top_p;
  // OpenAI's reasoning models refuse max_tokens; compatible servers mostly only know max_tokens.
  if (req.max_output_tokens !== undefined) body[target.provider === "openai" ? "max_completion_tokens" : "max_tokens"] = req.max_output_tokens;
  if (req.stop !== undefined) body.stop = stopFor(target.provider, req.stop);
  if (req.user !== undefined) body.user = req.user;
  for (const k of OPENAI_FIELDS) if (req[k] !== undefined) body[k] = req[k];
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  return { url: joinUrl(target.baseUrl, "/chat/completions"), headers, body };
}

const WireUsage = z.object({ prompt_tokens: z.number().int().min(0), completion_tokens: z.number().int().min(0) });
const WireToolCall = z.object({
  id: z.string(),
  type: z.string().optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
const WireResponse = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          refusal: z.string().nullable().optional(),
          tool_calls: z.array(WireToolCall).nullable().optional(),
        }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  usage: WireUsage.nullable().optional(),
});

export function mapFinishReason(reason: string | null | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    case "stop":
      return hasToolCalls ? "tool_calls" : "stop";
    default:
      return hasToolCalls ? "tool_calls" : "stop";
  }
}

function parseResponse(json: unknown, target: Target): ChatResult {
  const parsed = WireResponse.safeParse(json);
  if (!parsed.success) throw malformed(target.name, `openai response: ${parsed.error.message.slice(0, 300)}`);
  const choice = parsed.data.choices[0]!;
  const toolCalls = (choice.message.tool_calls ?? []).map((c) => ({ id: c.id, type: "function" as const, function: c.function }));
  const result: ChatResult = {
    message: { role: "assistant", content: choice.message.content ?? choice.message.refusal ?? null },
    finish_reason: mapFinishReason(choice.finish_reason, toolCalls.length > 0),
    upstream_model: parsed.data.model ?? target.upstreamModel,
  };
  if (toolCalls.length > 0) result.message.tool_calls = toolCalls;
  if (parsed.data.usage) result.usage = { prompt_tokens: parsed.data.usage.prompt_tokens, completion_tokens: parsed.data.usage.completion_tokens };
  return result;
}

const WireChunk = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullable().optional(),
            refusal: z.string().nullable().optional(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().min(0),
                  id: z.string().optional(),
                  function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
                }),
              )
              .nullable()
              .optional(),
          })
          .optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .nullable()
    .optional(),
  usage: WireUsage.nullable().optional(),
  // Groq reported usage here before it supported stream_options.
  x_groq: z.object({ usage: WireUsage.optional() }).optional(),
});

async function* parseStream(chunks: AsyncIterable<Uint8Array>, target: Target): AsyncGenerator<StreamEvent> {
  let finish: string | null | undefined;
  let sawToolCalls = false;
  let usage: Usage | undefined;
  let model = target.upstreamModel;
  for await (const ev of parseSse(chunks)) {
    if (ev.data === "[DONE]") {
      yield { type: "done", finish_reason: mapFinishReason(finish, sawToolCalls), usage, upstream_model: model };
      return;
    }
    const json = tryJson(ev.data);
    if (json && typeof json === "object" && "error" in json) {
      throw new ProviderError("BEM-071", `Model '${target.name}': upstream reported an error mid-stream`, {
        disposition: "retry",
        internal: ev.data.slice(0, 500),
      });
    }
    const parsed = WireChunk.safeParse(json);
    if (!parsed.success) throw malformed(target.name, `openai chunk: ${ev.data.slice(0, 300)}`);
    const chunk = parsed.data;
    if (chunk.model) model = chunk.model;
    const u = chunk.usage ?? chunk.x_groq?.usage;
    if (u) usage = { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens };
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (choice.finish_reason) finish = choice.finish_reason;
    const content = choice.delta?.content ?? choice.delta?.refusal ?? undefined;
    const calls: ToolCallDelta[] = (choice.delta?.tool_calls ?? []).map((c) => {
      const d: ToolCallDelta = { index: c.index };
      if (c.id !== undefined) d.id = c.id;
      if (c.function?.name !== undefined) d.name = c.function.name;
      if (c.function?.arguments !== undefined) d.arguments = c.function.arguments;
      return d;
    });
    if (calls.length > 0) sawToolCalls = true;
    // Role-only and empty deltas carry nothing; skipping them keeps "first event" meaningful for failover.
    if (!content && calls.length === 0) continue;
    const event: StreamEvent = { type: "delta" };
    if (content) event.content = content;
    if (calls.length > 0) event.tool_calls = calls;
    yield event;
  }
  throw streamCut(target.name);
}

export const openaiAdapter: Adapter = { buildRequest, parseResponse, parseStream };
