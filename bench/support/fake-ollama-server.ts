// A zero-latency Ollama /api/chat server on loopback: the far side of the network for benchmarks.
// Answers `stream: true` with NDJSON lines, anything else with one JSON body.
import { createServer, type Server } from "node:http";

const STREAM_REST_MS = 20;

export async function startFakeOllama(port = 11434): Promise<{ server: Server; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      calls++;
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { model?: string; messages?: unknown[]; stream?: boolean };
      if (body.stream === true) {
        // NDJSON as Ollama streams it: the first line at once, the rest STREAM_REST_MS later, so a
        // client's time to first byte is the first line's, not the whole answer's.
        const line = (content: string, done: boolean) =>
          `${JSON.stringify({ model: body.model ?? "llama3.2", created_at: new Date().toISOString(), message: { role: "assistant", content }, done, ...(done ? { done_reason: "stop", prompt_eval_count: 10, eval_count: 5 } : {}) })}\n`;
        res.writeHead(200, { "content-type": "application/x-ndjson" });
        res.write(line("ok ", false));
        setTimeout(() => res.end(line(`(${body.messages?.length ?? 0} messages seen)`, false) + line("", true)), STREAM_REST_MS);
        return;
      }
      const reply = {
        model: body.model ?? "llama3.2",
        created_at: new Date().toISOString(),
        message: { role: "assistant", content: `ok (${body.messages?.length ?? 0} messages seen)` },
        done_reason: "stop",
        done: true,
        total_duration: 1000,
        load_duration: 10,
        prompt_eval_count: 10,
        prompt_eval_duration: 100,
        eval_count: 5,
        eval_duration: 100,
      };
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return { server, calls: () => calls, close: () => new Promise((r) => server.close(() => r())) };
}
