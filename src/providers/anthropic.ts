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

/** Anthropic takes at most this many cache breakpoints per request. */
const MAX_CACHE_BREAKPOINTS = 4;

function imageBlock(url: string, target: Target): Block {
  const data = DATA_URL.exec(url);
  if (data) return { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  throw unsupported(target.name, "an image that is neither a base64 data URL nor an http(s) URL");
}

const withCache = (block: Block, part: { cache_control?: unknown }): Block =>
  part.cache_control !== undefined ? { ...block, cache_control: part.cache_control } : block;

/**
 * `calls`: an assistant message's tool_use blocks by id; a `tool_call` part puts its call there (taking it
 * out of `calls`, with the part's breakpoint), and the calls no part placed follow the content.
 */
function contentBlocks(content: ChatMessage["content"], target: Target, calls = new Map<string, Block>()): Block[] {
  if (content == null) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch is exhaustive over ContentPart (tsc checks it); the other arms throw
  return content.flatMap((part: ContentPart): Block[] => {
    switch (part.type) {
      case "text":
        // Anthropic rejects empty text blocks.
        return part.text === "" ? [] : [withCache({ type: "text", text: part.text }, part)];
      case "image_url":
        return [withCache(imageBlock(part.image_url.url, target), part)];
      case "document":
        return [withCache({ type: "document", ...part.document }, part)];
      // Thinking blocks go back exactly as Anthropic produced them: it checks their signatures.
      case "thinking":
        return [{ type: "thinking", thinking: part.thinking, signature: part.signature }];
      case "redacted_thinking":
        return [{ type: "redacted_thinking", data: part.data }];
      case "tool_call": {
        const call = calls.get(part.id);
        calls.delete(part.id);
        return call ? [withCache(call, part)] : [];
      }
      // A server-tool block goes back as the client sent it (its id pairs the use with its result).
      case "anthropic_block":
        return [{ ...part.block }];
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

/** A tool message as a tool_result block: text (or text-only parts) is one string, other parts become blocks; a breakpoint on its last part moves to the block. */
function toolResult(m: ChatMessage, target: Target): Block {
  const block: Block = { type: "tool_result", tool_use_id: m.tool_call_id ?? "" };
  const plainText = Array.isArray(m.content) && m.content.every((p) => p.type === "text" && p.cache_control === undefined);
  if (Array.isArray(m.content) && !plainText) {
    const blocks = contentBlocks(m.content, target);
    const last = blocks.at(-1);
    if (last?.cache_control !== undefined) {
      block.cache_control = last.cache_control;
      delete last.cache_control;
    }
    block.content = blocks;
  } else block.content = messageText(m.content);
  if (m.is_error) block.is_error = true;
  return block;
}

type System = { blocks: Block[]; asBlocks: boolean };

/**
 * System messages before the conversation are the system prompt (text blocks when the client sent
 * blocks, so its cache breakpoints stay where it put them; else one string, as before). A system
 * message after the conversation began (memory placed at the tail, README "Prompt caching") goes
 * into the user turn it precedes or follows, after the client's blocks, so the cached prefix is unchanged.
 */
function toWire(messages: ChatMessage[], target: Target): { system: System; messages: WireMessage[] } {
  const system: System = { blocks: [], asBlocks: false };
  const out: WireMessage[] = [];
  const pendingForUser: Block[] = [];
  const push = (role: WireMessage["role"], blocks: Block[]) => {
    if (role === "user" && pendingForUser.length > 0) blocks = [...blocks, ...pendingForUser.splice(0)];
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
        if (out.length === 0) {
          if (Array.isArray(m.content)) system.asBlocks = true;
          system.blocks.push(...contentBlocks(m.content, target).filter((b) => b.type === "text"));
        } else {
          const text = messageText(m.content);
          if (text !== "") pendingForUser.push({ type: "text", text });
        }
        break;
      }
      case "user":
        push("user", contentBlocks(m.content, target));
        break;
      case "assistant": {
        const calls = new Map<string, Block>(
          (m.tool_calls ?? []).map((call) => [call.id, { type: "tool_use", id: call.id, name: call.function.name, input: toolInput(call.function.arguments) }]),
        );
        const blocks = contentBlocks(m.content, target, calls);
        push("assistant", [...blocks, ...calls.values()]);
        break;
      }
      case "tool":
        push("user", [toolResult(m, target)]);
        break;
    }
  }
  if (pendingForUser.length > 0) {
    // Nothing followed: into the last user turn (after its blocks), or a user turn of its own.
    const lastUser = [...out].reverse().find((w) => w.role === "user");
    if (lastUser) lastUser.content.push(...pendingForUser.splice(0));
    else push("user", []);
  }
  return { system, messages: out };
}

/**
 * At most MAX_CACHE_BREAKPOINTS: the system's and tools' first, then the newest in the messages
 * (a thread replays turns that carried the breakpoint of their own request; those go first).
 */
function capBreakpoints(system: Block[], tools: Block[], messages: WireMessage[]): void {
  const marked: Block[] = [];
  const visit = (b: Block) => {
    if (b.cache_control !== undefined) marked.push(b);
    if (Array.isArray(b.content)) for (const inner of b.content as Block[]) visit(inner);
  };
  for (const m of messages) for (const b of m.content) visit(b);
  const fixed = [...system, ...tools].filter((b) => b.cache_control !== undefined).length;
  const room = Math.max(0, MAX_CACHE_BREAKPOINTS - fixed);
  for (const b of marked.slice(0, Math.max(0, marked.length - room))) delete b.cache_control;
}

/** Anthropic's minimum thinking budget. */
const MIN_THINKING_BUDGET = 1024;

/**
 * Anthropic wants thinking.budget_tokens below max_tokens; a max_tokens clamped to the model's
 * max_output_tokens can fall under the client's budget, so the budget shrinks with it (or, below
 * Anthropic's minimum, thinking is left off) rather than the call being refused.
 */
function fitThinking(thinking: Record<string, unknown>, maxTokens: number): Record<string, unknown> | undefined {
  const budget = thinking.budget_tokens;
  if (typeof budget !== "number" || budget < maxTokens) return thinking;
  return maxTokens - 1 >= MIN_THINKING_BUDGET ? { ...thinking, budget_tokens: maxTokens - 1 } : undefined;
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
  const extras = req.anthropic;
  const body: Record<string, unknown> = {
    ...(extras?.body ?? {}),
    model: target.upstreamModel,
    max_tokens: req.max_output_tokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    messages,
  };
  if (system.blocks.length > 0) body.system = system.asBlocks ? system.blocks : system.blocks.map((b) => b.text).join("\n\n");
  const tools: Block[] = (req.tools ?? []).map((t, i) => {
    const tool: Block = { name: t.function.name, input_schema: t.function.parameters ?? { type: "object", properties: {} } };
    if (t.function.description !== undefined) tool.description = t.function.description;
    if (extras?.tool_cache_control?.index === i) tool.cache_control = extras.tool_cache_control.cache_control;
    return tool;
  });
  tools.push(...(extras?.server_tools ?? []));
  if (tools.length > 0) {
    body.tools = tools;
    const choice = toolChoice(req.tool_choice, req.parallel_tool_calls);
    if (choice) body.tool_choice = choice;
  }
  capBreakpoints(Array.isArray(body.system) ? (body.system as Block[]) : [], tools, messages);
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (extras?.top_k !== undefined) body.top_k = extras.top_k;
  if (extras?.thinking !== undefined) body.thinking = fitThinking(extras.thinking, body.max_tokens as number);
  if (req.stop !== undefined) body.stop_sequences = typeof req.stop === "string" ? [req.stop] : req.stop;
  if (req.user !== undefined) body.metadata = { user_id: req.user };
  if (stream) body.stream = true;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    // The client's own version and betas reach Anthropic unchanged (Claude Code's gateway contract).
    "anthropic-version": extras?.version ?? ANTHROPIC_VERSION,
  };
  if (extras?.beta !== undefined) headers["anthropic-beta"] = extras.beta;
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

/** The usage we report: cached prompt tokens count as prompt tokens, and the cache counts pass through. */
function usageOf(u: WireUsage, output: number): Usage {
  const usage: Usage = { prompt_tokens: promptTokens(u), completion_tokens: output };
  if (u.cache_creation_input_tokens != null) usage.cache_creation_input_tokens = u.cache_creation_input_tokens;
  if (u.cache_read_input_tokens != null) usage.cache_read_input_tokens = u.cache_read_input_tokens;
  return usage;
}

const WireBlock = z.union([
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.unknown() }),
  z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal("redacted_thinking"), data: z.string() }),
  z.object({ type: z.string() }),
]);
const WireResponse = z.object({
  model: z.string().optional(),
  content: z.array(WireBlock),
  stop_reason: z.string().nullable().optional(),
  stop_sequence: z.string().nullable().optional(),
  usage: WireUsage.optional(),
});

function parseResponse(json: unknown, target: Target): ChatResult {
  const parsed = WireResponse.safeParse(json);
  if (!parsed.success) throw malformed(target.name, `anthropic response: ${parsed.error.message.slice(0, 300)}`);
  let text = "";
  let sawText = false;
  const toolCalls: NonNullable<ChatResult["message"]["tool_calls"]> = [];
  const thinking: NonNullable<ChatResult["message"]["thinking"]> = [];
  for (const block of parsed.data.content) {
    if ("text" in block) {
      text += block.text;
      sawText = true;
    } else if ("input" in block && "id" in block) {
      toolCalls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    } else if ("signature" in block) thinking.push({ type: "thinking", thinking: block.thinking, signature: block.signature });
    else if ("data" in block) thinking.push({ type: "redacted_thinking", data: block.data });
  }
  const result: ChatResult = {
    message: { role: "assistant", content: sawText ? text : null },
    finish_reason: mapStopReason(parsed.data.stop_reason),
    upstream_model: parsed.data.model ?? target.upstreamModel,
  };
  if (toolCalls.length > 0) result.message.tool_calls = toolCalls;
  if (thinking.length > 0) result.message.thinking = thinking;
  if (parsed.data.stop_reason) result.stop_reason = parsed.data.stop_reason;
  if (parsed.data.stop_sequence !== undefined) result.stop_sequence = parsed.data.stop_sequence;
  const u = parsed.data.usage;
  if (u && u.input_tokens !== undefined && u.output_tokens !== undefined) result.usage = usageOf(u, u.output_tokens);
  return result;
}

const WireEvent = z.object({
  type: z.string(),
  index: z.number().int().min(0).optional(),
  message: z.object({ model: z.string().optional(), usage: WireUsage.optional() }).optional(),
  content_block: z
    .object({ type: z.string(), id: z.string().optional(), name: z.string().optional(), data: z.string().optional(), thinking: z.string().optional() })
    .optional(),
  delta: z
    .object({
      type: z.string().optional(),
      text: z.string().optional(),
      partial_json: z.string().optional(),
      thinking: z.string().optional(),
      signature: z.string().optional(),
      stop_reason: z.string().nullable().optional(),
      stop_sequence: z.string().nullable().optional(),
    })
    .optional(),
  usage: WireUsage.optional(),
  error: z.object({ type: z.string(), message: z.string().optional() }).optional(),
});

async function* parseStream(chunks: AsyncIterable<Uint8Array>, target: Target): AsyncGenerator<StreamEvent> {
  let model = target.upstreamModel;
  let stop: string | null | undefined;
  let stopSequence: string | null | undefined;
  let input: WireUsage = {};
  let output: number | undefined;
  // Anthropic numbers all content blocks; OpenAI-style deltas number tool calls only, thinking deltas thinking blocks only.
  const toolIndex = new Map<number, { index: number; sentArgs: boolean }>();
  const thinkingIndex = new Map<number, number>();
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
        } else if (ev.content_block?.type === "thinking" && ev.index !== undefined) {
          thinkingIndex.set(ev.index, thinkingIndex.size);
          yield { type: "delta", thinking: { index: thinkingIndex.get(ev.index)!, thinking: ev.content_block.thinking ?? "" } };
        } else if (ev.content_block?.type === "redacted_thinking" && ev.index !== undefined) {
          thinkingIndex.set(ev.index, thinkingIndex.size);
          yield { type: "delta", thinking: { index: thinkingIndex.get(ev.index)!, redacted: ev.content_block.data ?? "" } };
        }
        break;
      case "content_block_delta":
        if (ev.delta?.type === "text_delta" && ev.delta.text) {
          yield { type: "delta", content: ev.delta.text };
        } else if ((ev.delta?.type === "thinking_delta" || ev.delta?.type === "signature_delta") && ev.index !== undefined) {
          const index = thinkingIndex.get(ev.index);
          if (index !== undefined)
            yield {
              type: "delta",
              thinking: {
                index,
                ...(ev.delta.thinking !== undefined ? { thinking: ev.delta.thinking } : {}),
                ...(ev.delta.signature !== undefined ? { signature: ev.delta.signature } : {}),
              },
            };
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
        if (ev.delta?.stop_sequence !== undefined) stopSequence = ev.delta.stop_sequence;
        if (ev.usage?.output_tokens !== undefined) output = ev.usage.output_tokens;
        if (ev.usage?.input_tokens !== undefined) input = { ...input, ...ev.usage };
        break;
      case "message_stop": {
        const usage = input.input_tokens !== undefined && output !== undefined ? usageOf(input, output) : undefined;
        yield {
          type: "done",
          finish_reason: mapStopReason(stop),
          usage,
          upstream_model: model,
          ...(stop ? { stop_reason: stop } : {}),
          ...(stopSequence !== undefined ? { stop_sequence: stopSequence } : {}),
        };
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
