import type { TurnResult } from "../pipeline/turn";
import type { DeltaEvent } from "../providers/types";
import type { ModelConfig } from "../config/model-config";
import { messageItem, type OutputItem, stepMessageId } from "../responses/convert";
import type { SseWriter } from "./sse";
import type { StreamRenderer } from "./stream-run";

/**
 * Renders a run as the Responses event sequence: response.created, response.in_progress,
 * then per output item …output_item.added, content_part.added / output_text.delta (text)
 * or function_call_arguments.delta (tool calls), their .done events, and response.completed (or
 * response.incomplete, when the model hit its output limit or a content filter).
 * A run that fails after output began ends with response.failed and an `error` event.
 */
export function responsesRenderer(opts: {
  /** What the output items' ids are made from (responses/ids.ts itemBase). */
  itemId: string;
  /** A stored response: its calls' call_id is their item id (responses/convert.ts replyToOutput). */
  stored: boolean;
  /** The Response object at a status (in_progress before the run ends). */
  snapshot(model: string): Record<string, unknown>;
  /** Called when the run succeeded: stores it (when asked) and returns the final Response. */
  complete(r: TurnResult): Promise<Record<string, unknown>>;
  failed(model: string, e: unknown): { response: Record<string, unknown>; error: { code: string; message: string } };
}): StreamRenderer {
  let seq = 0;
  let model = "";
  let nextIndex = 0;
  // The open message item: one per step of the run, closed when a later step's text begins.
  let text: { index: number; id: string; text: string; step: number } | undefined;
  const closed = new Set<string>();
  const calls = new Map<number, { index: number; id: string; call_id: string; name: string; args: string }>();
  // start() runs inside the SSE producer while deltas may already arrive: one queue keeps event order.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = (fn: () => Promise<void>): Promise<void> => {
    const next = queue.then(fn);
    queue = next.catch(() => undefined);
    return next;
  };
  const emit = (out: SseWriter, type: string, data: Record<string, unknown>) => out.send(JSON.stringify({ type, sequence_number: seq++, ...data }), type);

  async function openText(out: SseWriter, step: number) {
    if (text?.step === step) return text;
    if (text) {
      await closeItem(out, messageItem(text.id, text.text), text.index);
      closed.add(text.id);
    }
    text = { index: nextIndex++, id: stepMessageId(opts.itemId, step), text: "", step };
    await emit(out, "response.output_item.added", {
      output_index: text.index,
      item: { type: "message", id: text.id, status: "in_progress", role: "assistant", content: [] },
    });
    await emit(out, "response.content_part.added", {
      item_id: text.id,
      output_index: text.index,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [], logprobs: [] },
    });
    return text;
  }

  async function closeItem(out: SseWriter, item: OutputItem, index: number) {
    if (item.type === "message") {
      const t = item.content[0]?.text ?? "";
      await emit(out, "response.output_text.done", { item_id: item.id, output_index: index, content_index: 0, text: t, logprobs: [] });
      await emit(out, "response.content_part.done", { item_id: item.id, output_index: index, content_index: 0, part: item.content[0] });
    } else {
      await emit(out, "response.function_call_arguments.done", { item_id: item.id, output_index: index, name: item.name, arguments: item.arguments });
    }
    await emit(out, "response.output_item.done", { output_index: index, item });
  }

  return {
    start: (out: SseWriter, m: ModelConfig) =>
      serial(async () => {
        model = m.name;
        await emit(out, "response.created", { response: opts.snapshot(model) });
        await emit(out, "response.in_progress", { response: opts.snapshot(model) });
      }),
    delta: (out: SseWriter, ev: DeltaEvent) =>
      serial(async () => {
        if (ev.content) {
          const t = await openText(out, ev.step ?? 0);
          t.text += ev.content;
          await emit(out, "response.output_text.delta", { item_id: t.id, output_index: t.index, content_index: 0, delta: ev.content, logprobs: [] });
        }
        for (const d of ev.tool_calls ?? []) {
          let call = calls.get(d.index);
          if (!call) {
            const id = `fc_${opts.itemId}_${d.index}`;
            call = { index: nextIndex++, id, call_id: opts.stored ? id : (d.id ?? ""), name: d.name ?? "", args: "" };
            calls.set(d.index, call);
            await emit(out, "response.output_item.added", {
              output_index: call.index,
              item: { type: "function_call", id: call.id, call_id: call.call_id, name: call.name, arguments: "", status: "in_progress" },
            });
          }
          if (d.arguments) {
            call.args += d.arguments;
            await emit(out, "response.function_call_arguments.delta", { item_id: call.id, output_index: call.index, delta: d.arguments });
          }
        }
      }),
    done: (out: SseWriter, r: TurnResult) =>
      serial(async () => {
        const final = await opts.complete(r);
        const items = final.output as OutputItem[];
        // Items in the final output keep the indexes they streamed with; any not streamed (a reply
        // that arrived whole, e.g. after a server tool step) are announced now.
        for (const item of items) {
          if (closed.has(item.id)) continue;
          const streamed = item.type === "message" ? (text?.id === item.id ? text : undefined) : [...calls.values()].find((c) => c.id === item.id);
          const index = streamed ? streamed.index : nextIndex++;
          if (!streamed)
            await emit(out, "response.output_item.added", {
              output_index: index,
              item: { ...item, status: "in_progress", ...(item.type === "message" ? { content: [] } : { arguments: "" }) },
            });
          await closeItem(out, item, index);
        }
        // OpenAI ends an incomplete response's stream with response.incomplete (its terminal event), not response.completed.
        await emit(out, final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
      }),
    error: (out: SseWriter, e: unknown) =>
      serial(async () => {
        const f = opts.failed(model, e);
        await emit(out, "response.failed", { response: f.response });
        await emit(out, "error", { code: f.error.code, message: f.error.message, param: null });
      }),
  };
}
