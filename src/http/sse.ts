import { SSEStreamingApi } from "hono/streaming";
import { errorText, log } from "../core/log";

/**
 * A server-sent-events response whose producer runs independently of the
 * client: if the client disconnects, writes are dropped but the producer (and
 * whatever it saves at the end) still finishes, kept alive by waitUntil.
 * Events are written by Hono's SSE writer (`SSEStreamingApi`, the one behind
 * `streamSSE`); the response is built here rather than by `streamSSE(c, …)` so
 * a producer that outlives the client is kept alive explicitly.
 */
export type SseWriter = {
  /** Writes one event (with its `id:` when given); never throws (a gone client just stops receiving). */
  send(data: string, event?: string, id?: string): Promise<void>;
  readonly clientGone: boolean;
  /** Calls `listener` when the client goes away (its read of the stream is cancelled). */
  onGone(listener: () => void): void;
};

export function sseResponse(
  producer: (out: SseWriter) => Promise<void>,
  waitUntil: (p: Promise<unknown>) => void,
  headers: Record<string, string> = {},
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const stream = new SSEStreamingApi(writable, readable);
  const out: SseWriter = {
    get clientGone() {
      return stream.aborted;
    },
    onGone(listener) {
      stream.onAbort(listener);
    },
    async send(data, event, id) {
      if (stream.aborted) return;
      await stream.writeSSE({ data, ...(event ? { event } : {}), ...(id !== undefined ? { id } : {}) }); // a write to a gone client is dropped by the writer
    },
  };
  const done = producer(out)
    .catch((e: unknown) => log.error("sse", { message: errorText(e) }))
    .finally(() => stream.close());
  waitUntil(done);
  return new Response(stream.responseReadable, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...headers },
  });
}
