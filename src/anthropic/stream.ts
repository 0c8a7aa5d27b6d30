import type { TurnResult } from "../pipeline/turn";
import type { DeltaEvent } from "../providers/types";
import { stopReasonOf, usageOf } from "./from-turn";

/**
 * A streamed turn as Anthropic's documented event sequence (pure: events in, events out):
 * message_start; per content block content_block_start, content_block_delta… (text_delta,
 * input_json_delta, thinking_delta, signature_delta), content_block_stop; one ping after the first
 * block opens; message_delta (stop_reason, usage); message_stop. A failure after the first byte is
 * an `error` event (src/http/messages.ts) and no message_stop. An Anthropic upstream's block events
 * are sent as they came (server_tool_use and its input_json_delta, web_search_tool_result, citations_delta,
 * a type new to us), numbered in this message's block order.
 */
export type SseEvent = { event: string; data: Record<string, unknown> };

type Open = { kind: "text" } | { kind: "tool"; index: number } | { kind: "thinking"; index: number } | { kind: "upstream" } | null;

export class MessageStream {
  #block = -1;
  #open: Open = null;
  #pinged = false;

  constructor(
    private readonly id: string,
    private readonly inputTokens: number,
  ) {}

  start(model: string): SseEvent[] {
    return [
      ev("message_start", {
        message: {
          id: this.id,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: this.inputTokens, output_tokens: 0, cache_creation_input_tokens: null, cache_read_input_tokens: null },
        },
      }),
    ];
  }

  delta(d: DeltaEvent): SseEvent[] {
    const out: SseEvent[] = [];
    if (d.anthropic) {
      this.#upstream(out, d.anthropic);
      return out;
    }
    const t = d.thinking;
    if (t) {
      if (t.redacted !== undefined) {
        this.#openBlock(out, { kind: "thinking", index: t.index }, { type: "redacted_thinking", data: t.redacted });
      } else {
        if (!(this.#open?.kind === "thinking" && this.#open.index === t.index))
          this.#openBlock(out, { kind: "thinking", index: t.index }, { type: "thinking", thinking: "" });
        if (t.thinking) out.push(this.#delta({ type: "thinking_delta", thinking: t.thinking }));
        if (t.signature) out.push(this.#delta({ type: "signature_delta", signature: t.signature }));
      }
    }
    if (d.content) {
      if (this.#open?.kind !== "text") this.#openBlock(out, { kind: "text" }, { type: "text", text: "" });
      out.push(this.#delta({ type: "text_delta", text: d.content }));
    }
    for (const c of d.tool_calls ?? []) {
      if (!(this.#open?.kind === "tool" && this.#open.index === c.index)) {
        this.#openBlock(out, { kind: "tool", index: c.index }, { type: "tool_use", id: c.id ?? "", name: c.name ?? "", input: {} });
      }
      if (c.arguments) out.push(this.#delta({ type: "input_json_delta", partial_json: c.arguments }));
    }
    return out;
  }

  done(r: TurnResult): SseEvent[] {
    const out: SseEvent[] = [];
    this.#close(out);
    if (!this.#pinged) out.push(ev("ping", {}));
    const usage = usageOf(r.usage);
    out.push(ev("message_delta", { delta: stopReasonOf(r), usage }));
    out.push(ev("message_stop", {}));
    return out;
  }

  /** An Anthropic upstream's block event, unchanged but for its index (a run's later model calls number from 0 again). */
  #upstream(out: SseEvent[], e: NonNullable<DeltaEvent["anthropic"]>): void {
    if (e.event === "content_block_start") this.#openBlock(out, { kind: "upstream" }, e.body);
    else if (e.event === "content_block_delta" && this.#open?.kind === "upstream") out.push(this.#delta(e.body));
    else if (e.event === "content_block_stop") this.#close(out);
  }

  #openBlock(out: SseEvent[], open: Exclude<Open, null>, block: Record<string, unknown>): void {
    this.#close(out);
    this.#block++;
    this.#open = open;
    out.push(ev("content_block_start", { index: this.#block, content_block: block }));
    if (!this.#pinged) {
      this.#pinged = true;
      out.push(ev("ping", {}));
    }
  }

  #delta(delta: Record<string, unknown>): SseEvent {
    return ev("content_block_delta", { index: this.#block, delta });
  }

  #close(out: SseEvent[]): void {
    if (this.#open === null) return;
    out.push(ev("content_block_stop", { index: this.#block }));
    this.#open = null;
  }
}

const ev = (event: string, data: Record<string, unknown>): SseEvent => ({ event, data: { type: event, ...data } });
