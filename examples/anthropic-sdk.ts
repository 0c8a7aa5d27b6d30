/**
 * edgeweave from the official Anthropic SDK (@anthropic-ai/sdk): POST /v1/messages, on any configured
 * provider ("auto" routes; offline, to offline-echo), stateless or on a thread.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/anthropic-sdk.ts
 */
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ baseURL: `${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}`, apiKey: process.env.EDGEWEAVE_KEY ?? "" });
// "auto" routes (offline: to offline-echo); "claude-sonnet-4" needs the server secret ANTHROPIC_API_KEY
// (`wrangler secret put ANTHROPIC_API_KEY`, else 424 BEM-070); under `npm start` without it, offline-echo answers
await client.messages.create({ model: "auto", max_tokens: 1024, messages: [{ role: "user", content: "Hi" }] });

// On a thread: the conversation is kept, and a resent history is stored once.
const first = await client.messages.create(
  { model: "auto", max_tokens: 1024, messages: [{ role: "user", content: "Hi, I am Ada." }] },
  { headers: { "X-Thread-Id": "demo-anthropic" } },
);
const reply = first.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
const second = await client.messages.create(
  {
    model: "auto",
    max_tokens: 1024,
    messages: [
      { role: "user", content: "Hi, I am Ada." },
      { role: "assistant", content: reply },
      { role: "user", content: "What is my name?" },
    ],
  },
  { headers: { "X-Thread-Id": "demo-anthropic" } },
);
console.log(second.content);
