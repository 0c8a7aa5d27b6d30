import { z } from "@hono/zod-openapi";
import { estimateTextTokens, estimateTokens } from "../core/tokens";
import { messageText } from "../core/message";
import { ChatMessage, FunctionTool } from "./types";
import { pickTool, structuredContent, toolArguments } from "./offline-structured";

/**
 * The offline echo model: an in-process OpenAI-compatible responder (Chat
 * Completions wire format, JSON and SSE), so `npm start` runs a full turn with
 * no key and no network. It echoes the last user text and shows what memory
 * the turn carried. It is only reachable when EDGEWEAVE_OFFLINE=1 (see call.ts).
 * With `response_format` it answers JSON valid against the schema; given tools it
 * calls one only when the user plainly asks for it, with arguments read from the
 * text (offline-structured.ts); `tool_choice` forcing a tool always calls it.
 */

const OfflineRequest = z.object({
  model: z.string(),
  messages: z.array(ChatMessage).min(1),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  tools: z.array(FunctionTool).optional(),
  tool_choice: z.unknown().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  response_format: z.unknown().optional(),
});
type OfflineRequest = z.infer<typeof OfflineRequest>;

export const OFFLINE_LABEL = "(edgeweave offline echo model: no network, no API key)";
/** A fact group's header (`[kind scope]`, memory/facts.ts), or a client's one-line `[kind scope] text`. */
const FACT = /^\[[^\s\]]+ [^\]]+\]\s/;

type Reply = {
  content: string | null;
  tool_call?: { id: string; name: string; arguments: string };
  finish_reason: "stop" | "length" | "tool_calls";
};

/** The deterministic reply for a request; exported for tests and docs. */
export function offlineReply(req: OfflineRequest): Reply {
  const msgs = req.messages;
  const last = msgs[msgs.length - 1]!;
  if (last.role === "tool") {
    const answered = `The tool answered: ${messageText(last.content)}`;
    return { content: structuredContent(req.response_format, answered) ?? `${answered}\n${OFFLINE_LABEL}`, finish_reason: "stop" };
  }
  let lastUser = -1;
  for (let i = msgs.length - 1; i >= 0; i--)
    if (msgs[i]!.role === "user") {
      lastUser = i;
      break;
    }
  const text = lastUser >= 0 ? messageText(msgs[lastUser]!.content) : "";

  const tools = req.tools ?? [];
  const choice = req.tool_choice as { type?: string; function?: { name?: string } } | string | undefined;
  const forced = typeof choice === "object" && choice !== null ? tools.find((t) => t.function.name === choice.function?.name) : undefined;
  const tool =
    choice === "none"
      ? undefined
      : (forced ??
        pickTool(
          text,
          tools.map((t) => ({ ...t, name: t.function.name, description: t.function.description })),
        ) ??
        (choice === "required" ? tools[0] : undefined));
  if (tool) {
    const args = toolArguments(
      tool.function.parameters ?? { type: "object" },
      text,
      tools.map((t) => t.function.name),
    );
    return {
      content: null,
      tool_call: { id: `call_offline_${lastUser}`, name: tool.function.name, arguments: JSON.stringify(args) },
      finish_reason: "tool_calls",
    };
  }
  const structured = structuredContent(req.response_format, text);
  if (structured !== undefined) return { content: structured, finish_reason: "stop" };

  const facts = msgs.filter((m) => (m.role === "system" || m.role === "developer") && FACT.test(messageText(m.content)));
  const earlier = msgs.slice(0, Math.max(lastUser, 0)).filter((m) => m.role !== "system" && m.role !== "developer").length;
  const lines = [`Echo: ${text}`];
  for (const f of facts) {
    // One echo line per fact: a group's header before each of its lines.
    const [header, ...rest] = messageText(f.content).split("\n");
    if (rest.length === 0) lines.push(`I remember: ${header}`);
    for (const line of rest) lines.push(`I remember: ${header} ${line}`);
  }
  // The previous user message shows the thread's memory working across turns.
  let previous = -1;
  for (let i = lastUser - 1; i >= 0; i--)
    if (msgs[i]!.role === "user") {
      previous = i;
      break;
    }
  if (previous >= 0) lines.push(`Earlier you said: ${messageText(msgs[previous]!.content)}`);
  lines.push(`(${earlier} earlier message${earlier === 1 ? "" : "s"} in this thread)`, OFFLINE_LABEL);
  let content = lines.join("\n");

  const limit = req.max_completion_tokens ?? req.max_tokens ?? undefined;
  if (limit != null && estimateTextTokens(content) > limit) {
    content = content.slice(0, limit * 4);
    return { content, finish_reason: "length" };
  }
  return { content, finish_reason: "stop" };
}

/** A short stable id, so identical requests get identical replies. */
function replyId(body: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < body.length; i++) h = Math.imul(h ^ body.charCodeAt(i), 0x01000193) >>> 0;
  return `chatcmpl-offline-${h.toString(16).padStart(8, "0")}`;
}

const openAiError = (status: number, message: string, type: string) => Response.json({ error: { message, type, param: null, code: null } }, { status });

/** Serves POST …/chat/completions like an OpenAI-compatible server would. */
export async function offlineResponder(request: Request): Promise<Response> {
  if (request.method !== "POST" || !new URL(request.url).pathname.endsWith("/chat/completions")) {
    return openAiError(404, "Unknown route on the offline model", "invalid_request_error");
  }
  const raw = await request.text();
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return openAiError(400, "Body is not JSON", "invalid_request_error");
  }
  const parsed = OfflineRequest.safeParse(json);
  if (!parsed.success) return openAiError(400, "Invalid chat completion request", "invalid_request_error");
  const req = parsed.data;
  const reply = offlineReply(req);
  const id = replyId(raw);
  const created = Math.floor(Date.now() / 1000);
  const prompt_tokens = req.messages.reduce(
    (n, m) => n + estimateTokens({ role: m.role === "developer" ? "system" : m.role, content: m.content ?? null, name: m.name, tool_calls: m.tool_calls }),
    0,
  );
  const completion_tokens = estimateTextTokens(reply.content ?? "") + (reply.tool_call ? estimateTextTokens(reply.tool_call.name) : 0);
  const usage = { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
  const toolCalls = reply.tool_call
    ? [{ id: reply.tool_call.id, type: "function", function: { name: reply.tool_call.name, arguments: reply.tool_call.arguments } }]
    : undefined;

  if (!req.stream) {
    return Response.json({
      id,
      object: "chat.completion",
      created,
      model: req.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: reply.content, refusal: null, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
          logprobs: null,
          finish_reason: reply.finish_reason,
        },
      ],
      usage,
    });
  }

  const withUsage = req.stream_options?.include_usage === true;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: req.model, choices, ...(withUsage ? { usage: null } : {}), ...extra })}\n\n`;
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finish });
  const events: string[] = [chunk([choice({ role: "assistant", content: "" })])];
  if (reply.tool_call) {
    events.push(
      chunk([choice({ tool_calls: [{ index: 0, id: reply.tool_call.id, type: "function", function: { name: reply.tool_call.name, arguments: "" } }] })]),
    );
    events.push(chunk([choice({ tool_calls: [{ index: 0, function: { arguments: reply.tool_call.arguments } }] })]));
  }
  for (const piece of (reply.content ?? "").match(/\S+\s*|\s+/g) ?? []) events.push(chunk([choice({ content: piece })]));
  events.push(chunk([choice({}, reply.finish_reason)]));
  if (withUsage) events.push(chunk([], { usage }));
  events.push("data: [DONE]\n\n");
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const e of events) controller.enqueue(encoder.encode(e));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } });
}
