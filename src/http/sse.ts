import { errorText, log } from "../log";
/**
 * A server-sent-events response whose producer runs independently of the
 * client: if the client disconnects, writes are dropped but the producer (and
 * whatever it saves at the end) still finishes, kept alive by waitUntil.
 */
export type SseWriter = {
  /** Writes one event; never throws (a gone client just stops receiving). */
  send(data: string, event?: string): Promise<void>;
  readonly clientGone: boolean;
};

export function sseResponse(
  producer: (out: SseWriter) => Promise<void>,
  waitUntil: (p: Promise<unknown>) => void,
  headers: Record<string, string> = {},
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  let gone = false;
  const out: SseWriter = {
    get clientGone() {
      return gone;
    },
    async send(data, event) {
      if (gone) return;
      const lines = data.split(/\r?\n/).map((l) => `data: ${l}`).join("\n");
      try {
        await writer.write(encoder.encode(`${event ? `event: ${event}\n` : ""}${lines}\n\n`));
      } catch {
        gone = true;
      }
    },
  };
  const done = producer(out)
    .catch((e: unknown) => log.error("sse", { message: errorText(e) }))
    .finally(() => writer.close().catch(() => undefined));
  waitUntil(done);
  return new Response(readable, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...headers },
  });
}
