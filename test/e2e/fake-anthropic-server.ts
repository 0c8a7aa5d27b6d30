// A fake Anthropic Messages API on loopback: the far side of the network for the Claude Code
// end-to-end test. Records every request (headers and body) and answers POST /v1/messages with a
// fixed text, streamed as Anthropic's event sequence when asked.
import { createServer, type IncomingHttpHeaders } from "node:http";

export type Seen = { path: string; headers: IncomingHttpHeaders; body: { model?: string; stream?: boolean; messages?: unknown[]; system?: unknown } };

export async function startFakeAnthropic(answer: (n: number) => string): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Seen["body"];
      seen.push({ path: req.url ?? "", headers: req.headers, body });
      if (req.method !== "POST" || !req.url?.startsWith("/v1/messages")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: "fake: not served" } }));
        return;
      }
      const text = answer(seen.length);
      const usage = { input_tokens: 30, output_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
      const message = { id: `msg_fake${seen.length}`, type: "message", role: "assistant", model: body.model ?? "claude", stop_sequence: null };
      if (body.stream !== true) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ...message, content: [{ type: "text", text }], stop_reason: "end_turn", usage }));
        return;
      }
      const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(
        [
          event("message_start", { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }),
          event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          event("ping", {}),
          event("content_block_delta", { index: 0, delta: { type: "text_delta", text } }),
          event("content_block_stop", { index: 0 }),
          event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 6 } }),
          event("message_stop", {}),
        ].join(""),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((r) => server.close(() => r())) };
}
