/**
 * Shared core of the fake LLM providers (fake-openai, fake-anthropic,
 * fake-ollama): a per-test script of behaviours consumed one per call, and a
 * record of every request. Each fake renders replies in its provider's exact
 * wire format; this file knows nothing about formats.
 */
import { mockUpstream } from "./upstream";

export type FakeToolCall = { id?: string; name: string; arguments: Record<string, unknown> | string };

export type FakeReply = {
  text?: string | null;
  tool_calls?: FakeToolCall[];
  /** How streamed text is split; default: the text in two pieces. */
  chunks?: string[];
  /** A provider-native finish/stop reason; default from whether tools were called. */
  finish?: string;
  /** Reported usage; null means "the provider reports none". */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  /** The model id the provider says answered; default: the requested one. */
  model?: string;
  /**
   * Anthropic only: the reply's content blocks exactly as Anthropic writes them (server-tool blocks,
   * citations, any order), instead of text/tool_calls; streamed in Anthropic's event format.
   */
  blocks?: Record<string, unknown>[];
  /** Anthropic only: usage.server_tool_use (e.g. { web_search_requests: 1 }). */
  serverToolUse?: Record<string, number>;
};

export type Behaviour =
  | { kind: "reply"; reply: FakeReply }
  | { kind: "status"; status: number; headers?: Record<string, string>; body?: unknown }
  | { kind: "hang" }
  | { kind: "cut"; reply: FakeReply; stall: boolean }
  | { kind: "respond"; fn: (req: Request, body: unknown) => Response | Promise<Response> };

export type RecordedCall = {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** Parsed JSON; loosely typed because assertions read nested wire fields. */
  // biome-ignore lint/suspicious/noExplicitAny: test oracle over arbitrary wire JSON (see above)
  body: any;
};

/** Frames of a streamed reply: `frames` carry the content, `end` is the completion marker(s). */
export type StreamFrames = { frames: string[]; end: string[]; contentType: string };

export interface WireFormat {
  /** True when this URL is the chat endpoint the fake serves. */
  isChat(url: URL): boolean;
  isStream(body: unknown): boolean;
  json(reply: FakeReply, body: unknown): unknown;
  stream(reply: FakeReply, body: unknown): StreamFrames;
  errorBody(status: number): unknown;
}

export const DEFAULT_USAGE = { prompt_tokens: 12, completion_tokens: 5 };

/** The streamed pieces of a reply's text. */
export function textChunks(reply: FakeReply): string[] {
  if (reply.chunks) return reply.chunks;
  const text = reply.text ?? "";
  if (text.length < 2) return text === "" ? [] : [text];
  const mid = Math.ceil(text.length / 2);
  return [text.slice(0, mid), text.slice(mid)];
}

export const argsString = (args: FakeToolCall["arguments"]): string => (typeof args === "string" ? args : JSON.stringify(args));
export const argsObject = (args: FakeToolCall["arguments"]): unknown => (typeof args === "string" ? JSON.parse(args) : args);

export function requestedModel(body: unknown): string {
  return typeof body === "object" && body !== null && "model" in body && typeof body.model === "string" ? body.model : "unknown-model";
}

const encoder = new TextEncoder();

function streamResponse(parts: string[], contentType: string, stall: boolean): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const p of parts) controller.enqueue(encoder.encode(p));
      // A stalled stream stays open with nothing more to say; a cut one just ends.
      if (!stall) controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": contentType } });
}

export class FakeProvider {
  readonly calls: RecordedCall[] = [];
  readonly #queue: Behaviour[] = [];
  #fallback: ((body: unknown) => Behaviour | Promise<Behaviour>) | undefined;
  readonly #format: WireFormat;

  constructor(origin: string, format: WireFormat) {
    this.#format = format;
    mockUpstream(origin, (req) => this.#handle(req));
  }

  /** Queue a normal reply (JSON or stream, as the request asks). */
  reply(reply: string | FakeReply): this {
    return this.#push({ kind: "reply", reply: typeof reply === "string" ? { text: reply } : reply });
  }

  /** Queue an HTTP error with the provider's error body; `retryAfter` sets the retry-after header. */
  status(status: number, opts: { retryAfter?: string | number; headers?: Record<string, string>; body?: unknown } = {}): this {
    const headers = { ...opts.headers };
    if (opts.retryAfter !== undefined) headers["retry-after"] = String(opts.retryAfter);
    return this.#push({ kind: "status", status, headers, body: opts.body });
  }

  /** Queue a call that never answers (use a short timeout_ms). */
  hang(): this {
    return this.#push({ kind: "hang" });
  }

  /** Queue a stream that sends the content but never its completion marker; `stall` keeps it open instead of ending. */
  cut(reply: string | FakeReply, opts: { stall?: boolean } = {}): this {
    return this.#push({ kind: "cut", reply: typeof reply === "string" ? { text: reply } : reply, stall: opts.stall ?? false });
  }

  /** Queue a hand-written response. */
  respond(fn: (req: Request, body: unknown) => Response | Promise<Response>): this {
    return this.#push({ kind: "respond", fn });
  }

  /** What to do once the queue is empty (default: fail the call loudly). */
  otherwise(reply: string | FakeReply): this {
    const behaviour: Behaviour = { kind: "reply", reply: typeof reply === "string" ? { text: reply } : reply };
    this.#fallback = () => behaviour;
    return this;
  }

  /** Once the queue is empty, a reply or an HTTP status chosen per request: concurrent calls of different kinds, in no set order. */
  otherwiseBy(choose: (body: unknown) => FakeReply | number | Promise<FakeReply | number>): this {
    this.#fallback = async (body) => {
      const c = await choose(body);
      return typeof c === "number" ? { kind: "status", status: c, headers: {}, body: undefined } : { kind: "reply", reply: c };
    };
    return this;
  }

  get pending(): number {
    return this.#queue.length;
  }

  get last(): RecordedCall {
    const call = this.calls[this.calls.length - 1];
    if (!call) throw new Error("the fake provider received no call");
    return call;
  }

  #push(b: Behaviour): this {
    this.#queue.push(b);
    return this;
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const raw = await req.text();
    let body: unknown;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    this.calls.push({ url: req.url, method: req.method, headers: Object.fromEntries(req.headers), body });
    if (req.method !== "POST" || !this.#format.isChat(url)) return Response.json(this.#format.errorBody(404), { status: 404 });
    const behaviour = this.#queue.shift() ?? (await this.#fallback?.(body));
    if (!behaviour) throw new Error(`fake provider: no scripted behaviour left for ${req.method} ${req.url}`);
    const format = this.#format;
    switch (behaviour.kind) {
      case "reply": {
        if (!format.isStream(body)) return Response.json(format.json(behaviour.reply, body));
        const s = format.stream(behaviour.reply, body);
        return streamResponse([...s.frames, ...s.end], s.contentType, false);
      }
      case "status":
        return Response.json(behaviour.body ?? format.errorBody(behaviour.status), { status: behaviour.status, headers: behaviour.headers });
      case "hang":
        return new Promise<Response>((_, reject) => {
          req.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
        });
      case "cut": {
        if (!format.isStream(body)) {
          const full = JSON.stringify(format.json(behaviour.reply, body));
          return new Response(full.slice(0, Math.floor(full.length / 2)), { headers: { "content-type": "application/json" } });
        }
        const s = format.stream(behaviour.reply, body);
        return streamResponse(s.frames, s.contentType, behaviour.stall);
      }
      case "respond":
        return behaviour.fn(req, body);
    }
  }
}
