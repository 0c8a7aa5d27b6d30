import { AnthropicBlockPart, CacheControl, Citations, type ContentPart, type ToolCall } from "../core/message";
import { tryJson } from "./adapter";
import type { AnthropicBlockEvent, ChatResult } from "./types";

/**
 * Anthropic content blocks ↔ the thread's message form, for both directions of an assistant turn: a
 * turn a client sends (anthropic/to-turn.ts) and a reply an Anthropic upstream gives (anthropic.ts,
 * streamed or not) become the same parts, so a stored reply and the same turn resent by the client
 * are one message (thread/message-hash.ts), and both replay to Anthropic as the blocks came.
 */
export type Block = Record<string, unknown>;
type Reply = ChatResult["message"];

/** A text block as a part: its breakpoint and its citations kept (`citations: null` is none). */
export function textPart(b: { text: string; cache_control?: CacheControl | undefined; citations?: unknown }): ContentPart {
  const citations = Citations.safeParse(b.citations);
  return {
    type: "text",
    text: b.text,
    ...(b.cache_control ? { cache_control: b.cache_control } : {}),
    ...(citations.success ? { citations: citations.data } : {}),
  };
}

/** A block of an upstream's reply as a part: text, thinking as they are; any other block (server tools, a type new to us) whole. */
export function replyPart(b: Block): ContentPart {
  if (b.type === "text" && typeof b.text === "string") return textPart({ text: b.text, citations: b.citations });
  if (b.type === "thinking" && typeof b.thinking === "string" && typeof b.signature === "string")
    return { type: "thinking", thinking: b.thinking, signature: b.signature };
  if (b.type === "redacted_thinking" && typeof b.data === "string") return { type: "redacted_thinking", data: b.data };
  // Read as a client's block is read (type first), so the stored reply and the same block resent by the client are one message.
  const block = AnthropicBlockPart.shape.block.safeParse(b);
  return { type: "anthropic_block", block: block.success ? block.data : { ...b, type: String(b.type).slice(0, 64) || "unknown" } };
}

/**
 * An assistant turn's blocks: its tool_use blocks become tool_calls, the others parts (`part`). Where the
 * blocks' order is not "content, then calls" (text after a tool_use) or a tool_use carries a cache
 * breakpoint, each call also gets a `tool_call` part at its place, so the turn goes back to Anthropic
 * (and is stored) as it came.
 */
export function assistantTurn<B extends Block>(
  blocks: readonly B[],
  part: (b: B) => ContentPart | undefined,
): { content: ContentPart[] | null; tool_calls?: ToolCall[] } {
  const parts: ContentPart[] = [];
  const placed: ContentPart[] = [];
  const calls: ToolCall[] = [];
  let cached = false;
  for (const b of blocks) {
    if (b.type === "tool_use") {
      const id = String(b.id);
      calls.push({ id, type: "function", function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } });
      const cache = CacheControl.safeParse(b.cache_control);
      if (cache.success) cached = true;
      placed.push({ type: "tool_call", id, ...(cache.success ? { cache_control: cache.data } : {}) });
    } else if (b.type !== "tool_result") {
      const p = part(b);
      if (p) {
        parts.push(p);
        placed.push(p);
      }
    }
  }
  const lastContent = placed.findLastIndex((p) => p.type !== "tool_call");
  const firstCall = placed.findIndex((p) => p.type === "tool_call");
  const inOrder = firstCall < 0 || lastContent < firstCall;
  const content = inOrder && !cached ? parts : placed;
  return { content: content.length > 0 ? content : null, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
}

const isThinking = (p: ContentPart) => p.type === "thinking" || p.type === "redacted_thinking";

/**
 * A stored assistant message's parts as a reply: its text (joined), calls and thinking, and `parts` when
 * those cannot say it all (the one rule for a reply's `parts`, types.ts).
 */
export function replyOfParts(parts: readonly ContentPart[] | null, toolCalls?: ToolCall[]): Reply {
  const list = parts ?? [];
  const texts = list.flatMap((p) => (p.type === "text" ? [p.text] : []));
  const thinking = list.filter((p) => isThinking(p)) as NonNullable<Reply["thinking"]>;
  const reply: Reply = { role: "assistant", content: texts.length > 0 ? texts.join("") : null };
  if (toolCalls && toolCalls.length > 0) reply.tool_calls = toolCalls;
  if (thinking.length > 0) reply.thinking = thinking;
  // What the plain fields store (pipeline/run.ts): the thinking, then the text.
  const plain = [...thinking, ...(reply.content !== null ? [{ type: "text", text: reply.content }] : [])];
  if (JSON.stringify(plain) !== JSON.stringify(list)) reply.parts = [...list];
  return reply;
}

/** True when every part is one an Anthropic turn is made of (what replyOfParts reads back whole). */
export const isAnthropicShaped = (parts: readonly ContentPart[]): boolean =>
  parts.every((p) => p.type === "text" || isThinking(p) || p.type === "tool_call" || p.type === "anthropic_block");

/** An Anthropic upstream's reply blocks as the reply. */
export function replyOfBlocks(blocks: readonly Block[]): Reply {
  const turn = assistantTurn(blocks, replyPart);
  return replyOfParts(turn.content, turn.tool_calls);
}

/** Tool input: the streamed JSON as an object; what is not one is kept as the model wrote it. */
function inputOf(json: string): Record<string, unknown> {
  const parsed = json.trim() === "" ? {} : tryJson(json);
  return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { _raw_arguments: json };
}

/**
 * A streamed reply's blocks, folded from its content-block events as Anthropic's own SDK folds them
 * (text_delta, citations_delta, input_json_delta for tool_use and server_tool_use, thinking_delta,
 * signature_delta); a delta of a type new to us leaves the block as it stood (the client got the event).
 */
export class BlockFold {
  readonly #blocks: Block[] = [];
  readonly #json = new Map<number, string>();

  push(e: AnthropicBlockEvent): void {
    if (e.event === "content_block_start") {
      this.#blocks[e.index] = structuredClone(e.body);
      return;
    }
    const b = this.#blocks[e.index];
    if (!b) return;
    if (e.event === "content_block_stop") {
      const json = this.#json.get(e.index);
      if (json !== undefined) b.input = inputOf(json);
      return;
    }
    const d = e.body;
    const str = (v: unknown) => (typeof v === "string" ? v : "");
    switch (d.type) {
      case "text_delta":
        b.text = str(b.text) + str(d.text);
        break;
      case "citations_delta":
        b.citations = [...(Array.isArray(b.citations) ? b.citations : []), d.citation];
        break;
      case "input_json_delta":
        this.#json.set(e.index, (this.#json.get(e.index) ?? "") + str(d.partial_json));
        break;
      case "thinking_delta":
        b.thinking = str(b.thinking) + str(d.thinking);
        break;
      case "signature_delta":
        b.signature = str(d.signature);
        break;
    }
  }

  get seen(): boolean {
    return this.#blocks.length > 0;
  }

  get blocks(): Block[] {
    return this.#blocks.filter((b) => b !== undefined);
  }
}
