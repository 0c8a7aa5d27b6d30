// A fake OpenAI Chat Completions API on loopback: the far side of the network for the browser tests of
// LangGraph's API. It streams its answer a word at a time with a pause between words (so a page can see
// tokens arrive, and stop a run mid-answer), calls set_user_name when asked "call me <Name>" and that
// tool is offered, and answers a tool result by quoting it. Every request body is recorded.
import { createServer } from "node:http";

type Wire = { role: string; content?: unknown };
export type FakeRequest = { model?: string; stream?: boolean; messages: Wire[]; tools?: { function: { name: string } }[] };

/** Words of a long answer: a run that is still streaming seconds later, for a test to stop. */
export const LONG_WORDS = 120;

const text = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p: { text?: unknown }) => (typeof p?.text === "string" ? p.text : "")).join("")
      : "";

type Reply = { words: string[]; call?: { name: string; arguments: string } };

function reply(body: FakeRequest): Reply {
  const last = body.messages.at(-1);
  if (last?.role === "tool") return { words: `The tool answered: ${text(last.content)}`.split(/(?<= )/) };
  const said = text([...body.messages].reverse().find((m) => m.role === "user")?.content);
  const name = /call me (\w+)/i.exec(said)?.[1];
  if (name && body.tools?.some((t) => t.function.name === "set_user_name"))
    return { words: [], call: { name: "set_user_name", arguments: JSON.stringify({ new_name: name }) } };
  const words = `Echo: ${said}`.split(/(?<= )/);
  if (/\blong\b/i.test(said)) for (let i = 0; i < LONG_WORDS; i++) words.push(` word${i}`);
  return { words };
}

export async function startFakeOpenAI(opts: { wordDelayMs: number; port?: number }): Promise<{ url: string; seen: FakeRequest[]; close(): Promise<void> }> {
  const seen: FakeRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "fake: not served", type: "invalid_request_error" } }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as FakeRequest;
      seen.push(body);
      const { words, call } = reply(body);
      const id = `chatcmpl-fake${seen.length}`;
      const toolCalls = call ? [{ id: `call_fake${seen.length}`, type: "function", function: call }] : undefined;
      const finish = call ? "tool_calls" : "stop";
      const usage = { prompt_tokens: 20, completion_tokens: words.length + 1, total_tokens: 21 + words.length };
      if (body.stream !== true) {
        res.writeHead(200, { "content-type": "application/json" });
        const message = { role: "assistant", content: call ? null : words.join(""), ...(toolCalls ? { tool_calls: toolCalls } : {}) };
        res.end(
          JSON.stringify({ id, object: "chat.completion", created: 0, model: body.model, choices: [{ index: 0, message, finish_reason: finish }], usage }),
        );
        return;
      }
      let gone = false;
      res.on("close", () => (gone = true));
      const send = (delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}) =>
        res.write(
          `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
        );
      res.writeHead(200, { "content-type": "text/event-stream" });
      send({ role: "assistant", content: "" });
      if (toolCalls) send({ tool_calls: toolCalls.map((t, index) => ({ index, ...t })) });
      for (const word of words) {
        if (gone) return;
        await new Promise((r) => setTimeout(r, opts.wordDelayMs));
        send({ content: word });
      }
      send({}, finish);
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [], usage })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, "127.0.0.1", () => r()));
  const addr = server.address();
  const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return { url, seen, close: () => new Promise((r) => server.close(() => r())) };
}
