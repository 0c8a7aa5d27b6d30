/**
 * edgeweave from the official OpenAI SDK: the Responses API (chained by previous_response_id,
 * or on a conversation), streaming, and Chat Completions on a thread.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/openai-sdk.ts
 */
import OpenAI from "openai";

const client = new OpenAI({ baseURL: `${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}/v1`, apiKey: process.env.EDGEWEAVE_KEY ?? "" });

// A response is a checkpoint of a thread: previous_response_id continues it (the server keeps the history).
const first = await client.responses.create({ model: "auto", input: "Hi, I am Ada." });
const second = await client.responses.create({ model: "auto", input: "What is my name?", previous_response_id: first.id });
console.log(second.output_text);

// A conversation is a thread: create it (with items and metadata), then answer on it.
const conv = await client.conversations.create({
  metadata: { topic: "demo" },
  items: [{ type: "message", role: "user", content: "Remember: my favourite colour is green." }],
});
const onConv = await client.responses.create({ model: "auto", input: "What is my favourite colour?", conversation: conv.id });
console.log(onConv.output_text);

// Streaming: the Responses event sequence.
const stream = await client.responses.create({ model: "auto", input: "Stream a short answer", stream: true });
for await (const event of stream) if (event.type === "response.output_text.delta") process.stdout.write(event.delta);
console.log();

// Chat Completions on a thread (X-Thread-Id), retried safely with an Idempotency-Key.
const chat = await client.chat.completions.create(
  { model: "auto", messages: [{ role: "user", content: "Hello" }] },
  { headers: { "X-Thread-Id": "demo-sdk", "Idempotency-Key": crypto.randomUUID() } },
);
console.log(chat.choices[0]?.message.content);
