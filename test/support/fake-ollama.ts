/**
 * A fake Ollama server: POST /api/chat, one JSON object when `stream: false`,
 * otherwise NDJSON lines ending with a `done: true` line that carries
 * done_reason, prompt_eval_count and eval_count. Ollama streams by default.
 */
import { argsObject, DEFAULT_USAGE, type FakeReply, FakeProvider, requestedModel, textChunks, type WireFormat } from "./fake-llm";

const createdAt = "2026-11-29T10:00:00.000000Z";

function toolCalls(reply: FakeReply) {
  return (reply.tool_calls ?? []).map((c) => ({ function: { name: c.name, arguments: argsObject(c.arguments) } }));
}

function final(reply: FakeReply, body: unknown, content: string) {
  const out: Record<string, unknown> = {
    model: reply.model ?? requestedModel(body),
    created_at: createdAt,
    message: { role: "assistant", content },
    done_reason: reply.finish ?? "stop",
    done: true,
    total_duration: 5_000_000,
    load_duration: 1_000_000,
  };
  if (reply.usage !== null) {
    const u = reply.usage ?? DEFAULT_USAGE;
    Object.assign(out, { prompt_eval_count: u.prompt_tokens, prompt_eval_duration: 1_000_000, eval_count: u.completion_tokens, eval_duration: 3_000_000 });
  }
  return out;
}

const ollamaFormat: WireFormat = {
  isChat: (url) => url.pathname === "/api/chat",
  // Ollama streams unless told otherwise.
  isStream: (body) => !(typeof body === "object" && body !== null && (body as { stream?: unknown }).stream === false),
  json(reply, body) {
    const out = final(reply, body, reply.text ?? "");
    const calls = toolCalls(reply);
    if (calls.length > 0) (out.message as Record<string, unknown>).tool_calls = calls;
    return out;
  },
  stream(reply, body) {
    const model = reply.model ?? requestedModel(body);
    const line = (o: unknown) => `${JSON.stringify(o)}\n`;
    const frames = textChunks(reply).map((content) => line({ model, created_at: createdAt, message: { role: "assistant", content }, done: false }));
    const calls = toolCalls(reply);
    if (calls.length > 0) frames.push(line({ model, created_at: createdAt, message: { role: "assistant", content: "", tool_calls: calls }, done: false }));
    return { frames, end: [line(final(reply, body, ""))], contentType: "application/x-ndjson" };
  },
  errorBody(status) {
    return { error: status === 404 ? "model not found, try pulling it first" : `fake error ${status}` };
  },
};

export type FakeOllama = FakeProvider;

export function fakeOllama(origin = "http://localhost:11434"): FakeOllama {
  return new FakeProvider(origin, ollamaFormat);
}
