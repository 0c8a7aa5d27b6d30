/**
 * A fake OpenAI Chat Completions server (also Groq, NVIDIA NIM and any
 * OpenAI-compatible base_url): JSON and SSE `chat.completion.chunk` streams
 * ending in `data: [DONE]`, usage in the last chunk when asked for.
 */
import { argsString, DEFAULT_USAGE, type FakeReply, FakeProvider, requestedModel, textChunks, type WireFormat } from "./fake-llm";

const created = 1_765_000_000;

const toolCallId = (i: number, id?: string) => id ?? `call_fake${i}`;

function finishOf(reply: FakeReply): string {
  return reply.finish ?? (reply.tool_calls?.length ? "tool_calls" : "stop");
}

function usageOf(reply: FakeReply) {
  if (reply.usage === null) return undefined;
  const u = reply.usage ?? DEFAULT_USAGE;
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

const openaiFormat = (basePath: string): WireFormat => ({
  isChat: (url) => url.pathname === `${basePath}/chat/completions`,
  isStream: (body) => typeof body === "object" && body !== null && (body as { stream?: unknown }).stream === true,
  json(reply, body) {
    const message: Record<string, unknown> = { role: "assistant", content: reply.text ?? null, refusal: null, annotations: [] };
    if (reply.tool_calls?.length) {
      message.tool_calls = reply.tool_calls.map((c, i) => ({
        id: toolCallId(i, c.id),
        type: "function",
        function: { name: c.name, arguments: argsString(c.arguments) },
      }));
    }
    const out: Record<string, unknown> = {
      id: "chatcmpl-fake0001",
      object: "chat.completion",
      created,
      model: reply.model ?? requestedModel(body),
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(reply) }],
      service_tier: "default",
      system_fingerprint: "fp_fake",
    };
    const usage = usageOf(reply);
    if (usage) out.usage = usage;
    return out;
  },
  stream(reply, body) {
    const includeUsage = (body as { stream_options?: { include_usage?: boolean } }).stream_options?.include_usage === true;
    const model = reply.model ?? requestedModel(body);
    const frame = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: "chatcmpl-fake0001", object: "chat.completion.chunk", created, model, system_fingerprint: "fp_fake", choices, ...(includeUsage ? { usage: null } : {}), ...extra })}\n\n`;
    const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finish });
    const frames = [frame([choice({ role: "assistant", content: "", refusal: null })])];
    for (const piece of textChunks(reply)) frames.push(frame([choice({ content: piece })]));
    (reply.tool_calls ?? []).forEach((c, i) => {
      const args = argsString(c.arguments);
      const mid = Math.floor(args.length / 2);
      frames.push(frame([choice({ tool_calls: [{ index: i, id: toolCallId(i, c.id), type: "function", function: { name: c.name, arguments: "" } }] })]));
      frames.push(frame([choice({ tool_calls: [{ index: i, function: { arguments: args.slice(0, mid) } }] })]));
      frames.push(frame([choice({ tool_calls: [{ index: i, function: { arguments: args.slice(mid) } }] })]));
    });
    const end = [frame([choice({}, finishOf(reply))])];
    const usage = usageOf(reply);
    if (includeUsage && usage) end.push(frame([], { usage }));
    end.push("data: [DONE]\n\n");
    return { frames, end, contentType: "text/event-stream; charset=utf-8" };
  },
  errorBody(status) {
    if (status === 401) return { error: { message: "Incorrect API key provided.", type: "invalid_request_error", param: null, code: "invalid_api_key" } };
    if (status === 429) return { error: { message: "Rate limit reached for requests", type: "requests", param: null, code: "rate_limit_exceeded" } };
    if (status === 404)
      return {
        error: { message: "The model does not exist or you do not have access to it.", type: "invalid_request_error", param: null, code: "model_not_found" },
      };
    if (status >= 500) return { error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } };
    return { error: { message: "Invalid request.", type: "invalid_request_error", param: null, code: null } };
  },
});

export type FakeOpenAI = FakeProvider;

/** Serves `origin` + `basePath`/chat/completions (defaults: api.openai.com/v1). Groq: ("https://api.groq.com", "/openai/v1"). */
export function fakeOpenAI(origin = "https://api.openai.com", basePath = "/v1"): FakeOpenAI {
  return new FakeProvider(origin, openaiFormat(basePath));
}

/** A `respond` handler that answers a chat completion `text` after `ms` (a slow upstream). */
export const slowCompletion = (ms: number, text = "slow reply") => completionAfter(() => new Promise((r) => setTimeout(r, ms)), text);

/** A `respond` handler that answers a chat completion `text` once `wait()` (called when the request comes) resolves. */
export const completionAfter =
  (wait: () => Promise<unknown>, text: string) =>
  async (_req: Request, body: unknown): Promise<Response> => {
    await wait();
    return Response.json({
      id: "chatcmpl-slow",
      object: "chat.completion",
      created: 1,
      model: (body as { model: string }).model,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
  };
