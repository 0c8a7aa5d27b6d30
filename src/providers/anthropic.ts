import { z } from "@hono/zod-openapi";
import type { ContentPart } from "../core/message";
import { messageText } from "../core/message";
import { type Adapter, joinUrl, type Target, tryJson, type WireRequest } from "./adapter";
import { replyOfBlocks } from "./anthropic-blocks";
import { ANTHROPIC_VERSION, DEFAULT_ANTHROPIC_MAX_TOKENS } from "./defaults";
import { malformed, ProviderError, streamCut, unsupported } from "./provider-error";
import { parseSse } from "./sse";
import type { AnthropicBlockEvent, ChatMessage, ChatRequest, ChatResult, DeltaEvent, FinishReason, StreamEvent, ToolChoice, Usage } from "./types";

/** Anthropic Messages API: system split out, content blocks, tool_use / tool_result. */

type Block = Record<string, unknown>;
type WireMessage = { role: "user" | "assistant"; content: Block[] };

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** Anthropic takes at most this many cache breakpoints per request. */
const MAX_CACHE_BREAKPOINTS = 4;

function imageBlock(url: string, target: string): Block {
  const data = DATA_URL.exec(url);
  if (data) return { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  throw unsupported(target, "an image that is neither a base64 data URL nor an http(s) URL");
}

const withCache = (block: Block, part: { cache_control?: unknown }): Block =>
  part.cache_control !== undefined ? { ...block, cache_control: part.cache_control } : block;

/**
 * `calls`: an assistant message's tool_use blocks by id; a `tool_call` part puts its call there (taking it
 * out of `calls`, with the part's breakpoint), and the calls no part placed follow the content.
 */
function contentBlocks(content: ChatMessage["content"], target: string, calls = new Map<string, Block>()): Block[] {
  if (content == null) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch is exhaustive over ContentPart (tsc checks it); the other arms throw
  return content.flatMap((part: ContentPart): Block[] => {
    switch (part.type) {
      case "text":
        // Anthropic rejects empty text blocks.
        return part.text === "" ? [] : [withCache({ type: "text", text: part.text, ...(part.citations ? { citations: part.citations } : {}) }, part)];
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
      // A server-tool block (or one new to us) goes back as it came (its id pairs the use with its result).
      case "anthropic_block":
        return [{ ...part.block }];
      case "input_audio":
        throw unsupported(target, "audio input");
      case "video_url":
        throw unsupported(target, "video input");
    }
  });
}

/**
 * An assistant message as Anthropic's blocks, in its parts' order (each call at its `tool_call` part,
 * the others after the content): what the thread replays to Anthropic and what an Anthropic client is
 * answered (anthropic/from-turn.ts).
 */
export function assistantBlocks(m: Pick<ChatMessage, "content" | "tool_calls">, target: string): Block[] {
  const calls = new Map<string, Block>(
    (m.tool_calls ?? []).map((call) => [call.id, { type: "tool_use", id: call.id, name: call.function.name, input: toolInput(call.function.arguments) }]),
  );
  const blocks = contentBlocks(m.content, target, calls);
  return [...blocks, ...calls.values()];
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
    const blocks = contentBlocks(m.content, target.name);
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
 * message after the conversation began (memory placed at the tail, docs/guides/anthropic-and-claude-code.md) goes
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
          system.blocks.push(...contentBlocks(m.content, target.name).filter((b) => b.type === "text"));
        } else {
          const text = messageText(m.content);
          if (text !== "") pendingForUser.push({ type: "text", text });
        }
        break;
      }
      case "user":
        push("user", contentBlocks(m.content, target.name));
        break;
      case "assistant":
        push("assistant", assistantBlocks(m, target.name));
        break;
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
export const MIN_THINKING_BUDGET = 1024;

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
  // OpenAI's safety_identifier replaces its `user`: both name the end user, as Anthropic's metadata.user_id does.
  const endUser = req.safety_identifier ?? req.user;
  if (endUser !== undefined) body.metadata = { user_id: endUser };
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
  server_tool_use: z.record(z.string(), z.number().int().min(0)).nullable().optional(),
});
type WireUsage = z.infer<typeof WireUsage>;

// Cached prompt tokens are still prompt tokens for the caller's accounting.
const promptTokens = (u: WireUsage): number => (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);

/** The usage we report: cached prompt tokens count as prompt tokens, and the cache counts pass through. */
function usageOf(u: WireUsage, output: number): Usage {
  const usage: Usage = { prompt_tokens: promptTokens(u), completion_tokens: output };
  if (u.cache_creation_input_tokens != null) usage.cache_creation_input_tokens = u.cache_creation_input_tokens;
  if (u.cache_read_input_tokens != null) usage.cache_read_input_tokens = u.cache_read_input_tokens;
  if (u.server_tool_use != null) usage.server_tool_use = u.server_tool_use;
  return usage;
}

/** A reply's blocks are kept whole (any type, each with its fields): replyOfBlocks reads them. */
const WireResponse = z.object({
  model: z.string().optional(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullable().optional(),
  stop_sequence: z.string().nullable().optional(),
  usage: WireUsage.optional(),
});

function parseResponse(json: unknown, target: Target): ChatResult {
  const parsed = WireResponse.safeParse(json);
  if (!parsed.success) throw malformed(target.name, `anthropic response: ${parsed.error.message.slice(0, 300)}`);
  const result: ChatResult = {
    message: replyOfBlocks(parsed.data.content),
    finish_reason: mapStopReason(parsed.data.stop_reason),
    upstream_model: parsed.data.model ?? target.upstreamModel,
  };
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
  // Blocks and deltas of any type, with any fields (a type new to us reaches an Anthropic client as it came); read with text() below.
  content_block: z.looseObject({ type: z.string() }).optional(),
  delta: z.looseObject({ type: z.string().optional() }).optional(),
  usage: WireUsage.optional(),
  error: z.object({ type: z.string(), message: z.string().optional() }).optional(),
});
type WireEvent = z.infer<typeof WireEvent>;
const text = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

async function* parseStream(chunks: AsyncIterable<Uint8Array>, target: Target): AsyncGenerator<StreamEvent> {
  let model = target.upstreamModel;
  let stop: string | null | undefined;
  let stopSequence: string | null | undefined;
  let input: WireUsage = {};
  let output: number | undefined;
  // Anthropic numbers all content blocks; OpenAI-style deltas number tool calls only, thinking deltas thinking blocks only.
  const toolIndex = new Map<number, { index: number; sentArgs: boolean }>();
  const thinkingIndex = new Map<number, number>();
  /** A content-block event as an OpenAI-style delta (text, a tool call's pieces, thinking); empty for blocks that have none (server tools). */
  const portableDelta = (ev: WireEvent, at: number): DeltaEvent => {
    const block = ev.content_block;
    if (ev.type === "content_block_start") {
      if (block?.type === "tool_use") {
        const index = toolIndex.size;
        toolIndex.set(at, { index, sentArgs: false });
        return { type: "delta", tool_calls: [{ index, id: text(block.id) ?? "", name: text(block.name) ?? "", arguments: "" }] };
      }
      if (block?.type === "thinking") {
        thinkingIndex.set(at, thinkingIndex.size);
        return { type: "delta", thinking: { index: thinkingIndex.get(at)!, thinking: text(block.thinking) ?? "" } };
      }
      if (block?.type === "redacted_thinking") {
        thinkingIndex.set(at, thinkingIndex.size);
        return { type: "delta", thinking: { index: thinkingIndex.get(at)!, redacted: text(block.data) ?? "" } };
      }
      return { type: "delta" };
    }
    if (ev.type === "content_block_stop") {
      const tool = toolIndex.get(at);
      // A tool called with no arguments streams no JSON; OpenAI-style callers expect "{}".
      return tool && !tool.sentArgs ? { type: "delta", tool_calls: [{ index: tool.index, arguments: "{}" }] } : { type: "delta" };
    }
    const d = ev.delta;
    const said = text(d?.text);
    if (d?.type === "text_delta" && said) return { type: "delta", content: said };
    if (d?.type === "thinking_delta" || d?.type === "signature_delta") {
      const index = thinkingIndex.get(at);
      const thinking = text(d.thinking);
      const signature = text(d.signature);
      if (index === undefined) return { type: "delta" };
      return { type: "delta", thinking: { index, ...(thinking !== undefined ? { thinking } : {}), ...(signature !== undefined ? { signature } : {}) } };
    }
    const json = text(d?.partial_json);
    if (d?.type === "input_json_delta" && json) {
      const tool = toolIndex.get(at);
      if (!tool) return { type: "delta" };
      tool.sentArgs = true;
      return { type: "delta", tool_calls: [{ index: tool.index, arguments: json }] };
    }
    return { type: "delta" };
  };
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
      case "content_block_delta":
      case "content_block_stop": {
        if (ev.index === undefined) break;
        const raw = tryJson(sse.data) as Record<string, unknown>;
        const body = (ev.type === "content_block_start" ? raw.content_block : ev.type === "content_block_delta" ? raw.delta : {}) ?? {};
        // The portable fields for every client, and the event as it came for an Anthropic one (types.ts).
        const event = ev.type as AnthropicBlockEvent["event"];
        yield { ...portableDelta(ev, ev.index), anthropic: { event, index: ev.index, body: body as Record<string, unknown> } };
        break;
      }
      case "message_delta":
        if (ev.delta?.stop_reason !== undefined) stop = text(ev.delta.stop_reason) ?? null;
        if (ev.delta?.stop_sequence !== undefined) stopSequence = text(ev.delta.stop_sequence) ?? null;
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
