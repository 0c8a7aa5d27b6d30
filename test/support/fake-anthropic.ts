/**
 * A fake Anthropic Messages API: POST /v1/messages, JSON replies with content
 * blocks, and SSE streams with the real event sequence (message_start,
 * content_block_start/delta/stop, ping, message_delta, message_stop).
 */
import { argsObject, argsString, DEFAULT_USAGE, type FakeReply, FakeProvider, requestedModel, textChunks, type WireFormat } from "./fake-llm";

const toolUseId = (i: number, id?: string) => id ?? `toolu_fake${i}`;

function stopOf(reply: FakeReply): string {
  return reply.finish ?? (reply.tool_calls?.length || reply.blocks?.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn");
}

function usage(reply: FakeReply) {
  const u = reply.usage ?? DEFAULT_USAGE;
  return {
    input_tokens: u.prompt_tokens,
    output_tokens: u.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    service_tier: "standard",
    ...(reply.serverToolUse ? { server_tool_use: reply.serverToolUse } : {}),
  };
}

const halves = (s: string): string[] => (s.length < 2 ? [s] : [s.slice(0, Math.ceil(s.length / 2)), s.slice(Math.ceil(s.length / 2))]);

/**
 * One content block as Anthropic streams it: text opens empty, each citation a citations_delta, the text
 * in text_delta pieces; thinking opens empty, thinking_delta then signature_delta; tool_use and
 * server_tool_use open with input {} and their input comes as input_json_delta; other blocks
 * (web_search_tool_result, redacted_thinking, …) open whole.
 */
function blockFrames(block: Record<string, unknown>, index: number): string[] {
  const delta = (d: Record<string, unknown>) => sse("content_block_delta", { index, delta: d });
  const start = (b: Record<string, unknown>) => sse("content_block_start", { index, content_block: b });
  const out: string[] = [];
  if (block.type === "text") {
    out.push(start({ type: "text", text: "" }));
    for (const citation of (block.citations as unknown[] | undefined) ?? []) out.push(delta({ type: "citations_delta", citation }));
    for (const text of halves(String(block.text))) out.push(delta({ type: "text_delta", text }));
  } else if (block.type === "thinking") {
    out.push(start({ type: "thinking", thinking: "" }));
    for (const thinking of halves(String(block.thinking))) out.push(delta({ type: "thinking_delta", thinking }));
    out.push(delta({ type: "signature_delta", signature: block.signature }));
  } else if (block.type === "tool_use" || block.type === "server_tool_use") {
    out.push(start({ ...block, input: {} }));
    for (const partial_json of halves(JSON.stringify(block.input))) out.push(delta({ type: "input_json_delta", partial_json }));
  } else out.push(start(block));
  out.push(sse("content_block_stop", { index }));
  return out;
}

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

const anthropicFormat: WireFormat = {
  isChat: (url) => url.pathname === "/v1/messages",
  isStream: (body) => typeof body === "object" && body !== null && (body as { stream?: unknown }).stream === true,
  json(reply, body) {
    const content: unknown[] = reply.blocks ? [...reply.blocks] : [];
    if (reply.text && !reply.blocks) content.push({ type: "text", text: reply.text });
    for (const [i, c] of (reply.tool_calls ?? []).entries())
      content.push({ type: "tool_use", id: toolUseId(i, c.id), name: c.name, input: argsObject(c.arguments) });
    return {
      id: "msg_fake0001",
      type: "message",
      role: "assistant",
      model: reply.model ?? requestedModel(body),
      content,
      stop_reason: stopOf(reply),
      stop_sequence: null,
      usage: usage(reply),
    };
  },
  stream(reply, body) {
    const u = usage(reply);
    const frames = [
      sse("message_start", {
        message: {
          id: "msg_fake0001",
          type: "message",
          role: "assistant",
          content: [],
          model: reply.model ?? requestedModel(body),
          stop_reason: null,
          stop_sequence: null,
          usage: { ...u, output_tokens: 1 },
        },
      }),
    ];
    let index = 0;
    if (reply.blocks) {
      reply.blocks.forEach((b, i) => {
        frames.push(...blockFrames(b, i));
        if (i === 0) frames.push(sse("ping", {}));
      });
      return {
        frames,
        end: [
          sse("message_delta", {
            delta: { stop_reason: stopOf(reply), stop_sequence: null },
            usage: { output_tokens: u.output_tokens, ...(reply.serverToolUse ? { server_tool_use: reply.serverToolUse } : {}) },
          }),
          sse("message_stop", {}),
        ],
        contentType: "text/event-stream; charset=utf-8",
      };
    }
    const pieces = textChunks(reply);
    if (pieces.length > 0) {
      frames.push(sse("content_block_start", { index, content_block: { type: "text", text: "" } }));
      frames.push(sse("ping", {}));
      for (const text of pieces) frames.push(sse("content_block_delta", { index, delta: { type: "text_delta", text } }));
      frames.push(sse("content_block_stop", { index }));
      index++;
    }
    (reply.tool_calls ?? []).forEach((c, i) => {
      const args = argsString(c.arguments);
      const mid = Math.floor(args.length / 2);
      frames.push(sse("content_block_start", { index, content_block: { type: "tool_use", id: toolUseId(i, c.id), name: c.name, input: {} } }));
      frames.push(sse("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: "" } }));
      frames.push(sse("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: args.slice(0, mid) } }));
      frames.push(sse("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: args.slice(mid) } }));
      frames.push(sse("content_block_stop", { index }));
      index++;
    });
    const end = [
      sse("message_delta", { delta: { stop_reason: stopOf(reply), stop_sequence: null }, usage: { output_tokens: u.output_tokens } }),
      sse("message_stop", {}),
    ];
    return { frames, end, contentType: "text/event-stream; charset=utf-8" };
  },
  errorBody(status) {
    const type =
      status === 401
        ? "authentication_error"
        : status === 403
          ? "permission_error"
          : status === 404
            ? "not_found_error"
            : status === 429
              ? "rate_limit_error"
              : status === 529
                ? "overloaded_error"
                : status >= 500
                  ? "api_error"
                  : "invalid_request_error";
    return { type: "error", error: { type, message: `fake ${type}` } };
  },
};

export type FakeAnthropic = FakeProvider;

export function fakeAnthropic(origin = "https://api.anthropic.com"): FakeAnthropic {
  return new FakeProvider(origin, anthropicFormat);
}
