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

// Chat Completions on a thread named in the body (thread_id) or by the X-Thread-Id header, streamed.
const hello: OpenAI.ChatCompletionCreateParamsNonStreaming & { thread_id: string } = {
  model: "auto",
  messages: [{ role: "user", content: "Hello" }],
  thread_id: "demo-2",
};
const r = await client.chat.completions.create(hello);
console.log(r.choices[0]?.message.content, r.model);
const chatStream = await client.chat.completions.create(
  { model: "auto", messages: [{ role: "user", content: "Again" }], stream: true },
  { headers: { "X-Thread-Id": "demo-2" } },
);
for await (const chunk of chatStream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
console.log();

// Retried safely: one Idempotency-Key per logical request, in the request's headers.
const key = crypto.randomUUID(); // one per logical request: reuse it when you resend this one
const booked = await client.chat.completions.create(
  { model: "auto", messages: [{ role: "user", content: "Book the room" }] },
  { headers: { "Idempotency-Key": key, "X-Thread-Id": "demo-2" } },
);
console.log(booked.choices[0]?.message.content);

// Chat Completions on a thread (X-Thread-Id), retried safely with an Idempotency-Key.
const chat = await client.chat.completions.create(
  { model: "auto", messages: [{ role: "user", content: "Hello" }] },
  { headers: { "X-Thread-Id": "demo-sdk", "Idempotency-Key": crypto.randomUUID() } },
);
console.log(chat.choices[0]?.message.content);
