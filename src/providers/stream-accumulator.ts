import type { ToolCall } from "../core/message";
import { BlockFold, replyOfBlocks } from "./anthropic-blocks";
import { streamCut } from "./provider-error";
import type { ChatResult, DoneEvent, StreamEvent } from "./types";

/** Folds stream events into the ChatResult they add up to (what the pipeline saves). */
export class StreamAccumulator {
  #content = "";
  #sawContent = false;
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();
  readonly #thinking = new Map<number, NonNullable<ChatResult["message"]["thinking"]>[number]>();
  /** An Anthropic upstream's blocks as they came: the reply's `parts` when its plain fields cannot say it all. */
  readonly #blocks = new BlockFold();
  #done: DoneEvent | undefined;

  push(event: StreamEvent): void {
    if (event.type === "done") {
      this.#done = event;
      return;
    }
    if (event.anthropic) this.#blocks.push(event.anthropic);
    if (event.content !== undefined) {
      this.#content += event.content;
      this.#sawContent = true;
    }
    const t = event.thinking;
    if (t) {
      if (t.redacted !== undefined) this.#thinking.set(t.index, { type: "redacted_thinking", data: t.redacted });
      else {
        const block = this.#thinking.get(t.index);
        const open = block?.type === "thinking" ? block : { type: "thinking" as const, thinking: "", signature: "" };
        open.thinking += t.thinking ?? "";
        if (t.signature !== undefined) open.signature += t.signature;
        this.#thinking.set(t.index, open);
      }
    }
    for (const d of event.tool_calls ?? []) {
      const call = this.#calls.get(d.index) ?? { id: "", name: "", arguments: "" };
      if (d.id) call.id = d.id;
      // The name arrives whole, in the first fragment of its call.
      if (d.name && call.name === "") call.name = d.name;
      if (d.arguments) call.arguments += d.arguments;
      this.#calls.set(d.index, call);
    }
  }

  get done(): boolean {
    return this.#done !== undefined;
  }

  /** The finished result; throws BEM-074 if the stream never completed. */
  result(modelName: string): ChatResult {
    const done = this.#done;
    if (!done) throw streamCut(modelName);
    const result = this.#fold(done);
    const parts = this.#blocks.seen ? replyOfBlocks(this.#blocks.blocks).parts : undefined;
    if (parts) result.message.parts = parts;
    return result;
  }

  /** What arrived before a stream was cut: its content and calls so far, no usage (a cut stream reports none). */
  partial(): ChatResult {
    return this.#fold({ type: "done", finish_reason: "length", upstream_model: "" });
  }

  #fold(done: DoneEvent): ChatResult {
    const toolCalls: ToolCall[] = [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
    const result: ChatResult = {
      message: { role: "assistant", content: this.#sawContent ? this.#content : null },
      finish_reason: done.finish_reason,
      upstream_model: done.upstream_model,
    };
    if (toolCalls.length > 0) result.message.tool_calls = toolCalls;
    if (this.#thinking.size > 0) result.message.thinking = [...this.#thinking.entries()].sort(([a], [b]) => a - b).map(([, b]) => b);
    if (done.stop_reason !== undefined) result.stop_reason = done.stop_reason;
    if (done.stop_sequence !== undefined) result.stop_sequence = done.stop_sequence;
    if (done.usage) result.usage = done.usage;
    return result;
  }
}
