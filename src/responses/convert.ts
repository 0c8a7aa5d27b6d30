import { openAIParams } from "../edge/chat-schemas";
import { AppError } from "../core/errors";
import type { ChatRequest, ChatResult } from "../providers/types";
import { type ContentPart, documentText, type Message, type MessageInput, type ParsedMessageInput } from "../core/message";
import type { ResolvedItem, ResponseContentPart, ResponseCreateRequest } from "../edge/responses-schemas";

/** Responses content parts → the thread's (OpenAI chat) content parts. */
function toParts(content: string | ResponseContentPart[]): string | ContentPart[] {
  if (typeof content === "string") return content;
  const parts: ContentPart[] = [];
  for (const p of content) {
    if (p.type === "input_text" || p.type === "output_text") parts.push({ type: "text", text: p.text });
    else if (p.type === "refusal") parts.push({ type: "text", text: p.refusal });
    else if (p.type === "input_audio") parts.push({ type: "input_audio", input_audio: p.input_audio });
    else if (p.image_url) parts.push({ type: "image_url", image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } });
    else throw new AppError("BEM-103", "input_image needs an image_url (file ids are not supported)");
  }
  // A single text part is stored as plain text, as chat clients send it (so resends compare equal).
  return parts.length === 1 && parts[0]!.type === "text" ? parts[0]!.text : parts;
}

const outputText = (output: string | ResponseContentPart[]) =>
  typeof output === "string" ? output : output.map((p) => (p.type === "input_text" || p.type === "output_text" ? p.text : "")).join("");

/**
 * Input items → thread messages. Consecutive function_call items (and the assistant
 * text before them) become one assistant message with tool_calls, as in chat.
 */
export function inputToMessages(input: string | readonly ResolvedItem[], instructions?: string | null): ParsedMessageInput[] {
  const out: ParsedMessageInput[] = instructions ? [{ role: "system", content: instructions }] : [];
  const items: readonly ResolvedItem[] = typeof input === "string" ? [{ role: "user", content: input }] : input;
  for (const item of items) {
    if (item.type === "reasoning") continue;
    if (item.type === "function_call") {
      const call = { id: item.call_id, type: "function" as const, function: { name: item.name, arguments: item.arguments } };
      const last = out.at(-1);
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
      else out.push({ role: "assistant", content: null, tool_calls: [call] });
      continue;
    }
    if (item.type === "function_call_output") {
      out.push({ role: "tool", tool_call_id: item.call_id, content: outputText(item.output) });
      continue;
    }
    const role = item.role === "developer" ? "system" : item.role;
    out.push({ role, content: toParts(item.content) });
  }
  return out;
}

/** Call ids answered by function_call_output items that no function_call in this input made. */
export function unansweredCallIds(messages: MessageInput[]): string[] {
  const made = new Set(messages.flatMap((m) => (m.tool_calls ?? []).map((t) => t.id)));
  return messages.filter((m) => m.role === "tool" && m.tool_call_id !== undefined && !made.has(m.tool_call_id)).map((m) => m.tool_call_id!);
}

/** Call ids made by the given (stored) messages. */
export const callIdsOf = (messages: readonly Pick<Message, "tool_calls">[]): Set<string> =>
  new Set(messages.flatMap((m) => (m.tool_calls ?? []).map((t) => t.id)));

/** Responses tools / tool_choice / text.format → the chat parameters the pipeline passes to providers. */
export function toChatParams(body: ResponseCreateRequest): Omit<ChatRequest, "messages"> {
  const format = body.text?.format;
  const choice = body.tool_choice;
  return {
    ...(body.tools?.length
      ? {
          tools: body.tools.map((t) => ({
            type: "function" as const,
            function: {
              name: t.name,
              ...(t.description ? { description: t.description } : {}),
              ...(t.parameters ? { parameters: t.parameters } : {}),
              ...(t.strict != null ? { strict: t.strict } : {}),
            },
          })),
        }
      : {}),
    ...(choice ? { tool_choice: typeof choice === "string" ? choice : { type: "function" as const, function: { name: choice.name } } } : {}),
    ...(body.parallel_tool_calls != null ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    ...(format && format.type === "json_object" ? { response_format: { type: "json_object" } } : {}),
    ...(format && format.type === "json_schema"
      ? {
          response_format: {
            type: "json_schema",
            json_schema: {
              name: format.name,
              schema: format.schema,
              ...(format.description ? { description: format.description } : {}),
              ...(format.strict != null ? { strict: format.strict } : {}),
            },
          },
        }
      : {}),
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { top_p: body.top_p } : {}),
    ...(body.max_output_tokens != null ? { max_output_tokens: body.max_output_tokens } : {}),
    ...(body.user ? { user: body.user } : {}),
    ...(body.reasoning?.effort != null ? { reasoning_effort: body.reasoning.effort } : {}),
    ...(body.text?.verbosity != null ? { verbosity: body.text.verbosity } : {}),
    ...openAIParams(body),
  };
}

export type OutputItem =
  | { type: "message"; id: string; status: "completed"; role: "assistant"; content: { type: "output_text"; text: string; annotations: []; logprobs: [] }[] }
  | { type: "function_call"; id: string; call_id: string; name: string; arguments: string; status: "completed" };

/**
 * The reply as Responses output items: its text as one message, then one function_call per tool
 * call. A stored response's calls carry their item id as `call_id` (`fc_<hex>_<thread>_<n>`), so an
 * output answering one names its thread, as an item_reference does (the AI SDK sends a tool loop's
 * calls and outputs by call_id, never by reference); the provider's id stays in the thread and is
 * what the call is answered by there (references.ts translates).
 */
export function replyToOutput(reply: ChatResult["message"], itemId: string, stored = false, stepTexts: readonly string[] = []): OutputItem[] {
  // One message per step with text: the steps before the reply's (an agent's own tools answered their calls), then the reply's.
  const out: OutputItem[] = stepTexts.flatMap((t, step) => (t === "" ? [] : [messageItem(stepMessageId(itemId, step), t)]));
  const text = typeof reply.content === "string" ? reply.content : reply.content === null ? "" : JSON.stringify(reply.content);
  if (text !== "" || !reply.tool_calls?.length) out.push(messageItem(stepMessageId(itemId, stepTexts.length), text));
  for (const [i, c] of (reply.tool_calls ?? []).entries()) {
    const id = `fc_${itemId}_${i}`;
    out.push({ type: "function_call", id, call_id: stored ? id : c.id, name: c.function.name, arguments: c.function.arguments, status: "completed" });
  }
  return out;
}

/** A step's message item id: a run's first step has the response's `msg_<base>`, a later one `msg_s<step>_<base>` (responses/ids.ts). */
export const stepMessageId = (itemId: string, step: number): string => (step === 0 ? `msg_${itemId}` : `msg_s${step}_${itemId}`);

/** A completed assistant message item of a Response's output. */
export const messageItem = (id: string, text: string): OutputItem => ({
  type: "message",
  id,
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
});

/** The call ids a Response's output made (its function_call items). */
export const outputCallIds = (output: readonly { type?: string; call_id?: string }[]): string[] =>
  output.flatMap((o) => (o.type === "function_call" && o.call_id ? [o.call_id] : []));

/** Input messages as Responses input items (GET /v1/responses/:id/input_items, conversation items). */
export function messagesToItems(messages: readonly (MessageInput & { id?: string })[], idPrefix: string): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  messages.forEach((m, i) => {
    const id = `${idPrefix}_${m.id ?? i}`;
    if (m.role === "tool") {
      items.push({
        type: "function_call_output",
        id,
        call_id: m.tool_call_id ?? "",
        output: typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? ""),
        status: "completed",
      });
      return;
    }
    const content = m.content ?? "";
    const hasText = typeof content === "string" ? content !== "" : content.length > 0;
    if (hasText || !m.tool_calls?.length) {
      const textType = m.role === "assistant" ? "output_text" : "input_text";
      const parts =
        typeof content === "string"
          ? [{ type: textType, text: content, ...(textType === "output_text" ? { annotations: [] } : {}) }]
          : content.flatMap((p): Record<string, unknown>[] => {
              // Anthropic thinking blocks have no Responses item here; a plain-text document reads as its text.
              // Nor do a tool call's place among the parts (the calls follow as function_call items) and Anthropic's server-tool blocks.
              if (p.type === "thinking" || p.type === "redacted_thinking" || p.type === "tool_call" || p.type === "anthropic_block") return [];
              if (p.type === "document") return [{ type: "input_text", text: documentText(p) ?? "" }];
              if (p.type === "text") return [{ type: textType, text: p.text, ...(textType === "output_text" ? { annotations: [] } : {}) }];
              if (p.type === "image_url") return [{ type: "input_image", image_url: p.image_url.url, detail: p.image_url.detail ?? "auto" }];
              if (p.type === "input_audio") return [{ type: "input_audio", input_audio: p.input_audio }];
              return [{ type: "input_text", text: p.video_url.url }];
            });
      items.push({ type: "message", id, status: "completed", role: m.role === "system" ? "system" : m.role, content: parts });
    }
    for (const [j, t] of (m.tool_calls ?? []).entries()) {
      items.push({ type: "function_call", id: `${id}_fc${j}`, call_id: t.id, name: t.function.name, arguments: t.function.arguments, status: "completed" });
    }
  });
  return items;
}
