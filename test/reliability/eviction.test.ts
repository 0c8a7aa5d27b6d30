/**
 * The thread's Durable Object is evicted (its instance torn down, storage kept)
 * between turns, while a provider call is in flight, and between the chunks of
 * a streamed reply: nothing is lost and the conversation continues with its
 * whole history.
 */
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { threadObjectName } from "../../src/thread/thread-id";
import { snapshot, uniqueThread, wireMessages, wireText } from "../support/runs";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { clearUpstream, unmockedRequests } from "../support/upstream";
import { report } from "./support";

let t: TestTenant;
const figures = { evictions: 0, turns: 0, turns_lost: 0, streamed_evictions: 0 };

beforeAll(async () => {
  t = await createTenant();
});
afterEach(() => {
  expect(unmockedRequests()).toEqual([]);
  clearUpstream();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stubOf = (thread: string) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, thread)));

/** Wakes the object (eviction refuses one that is not running) and evicts it. */
async function evict(thread: string): Promise<void> {
  const stub = stubOf(thread);
  await stub.getState(null);
  await evictDurableObject(stub);
  figures.evictions++;
}

type Msg = { role: string; content: unknown };
const messagesOf = async (thread: string) =>
  ((await (await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).json()) as { channels: { messages: Msg[] } }).channels.messages;

async function say(thread: string, content: string, model = "auto") {
  figures.turns++;
  const res = await api("/v1/chat/completions", { key: t.adminKey, body: { model, thread_id: thread, messages: [{ role: "user", content }] } });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
}

/** An OpenAI SSE reply whose frames after the first `open` are held until `release()` (a polled flag: a promise resolved from the test context would not wake the worker side). */
function gatedStream(pieces: string[], open: number) {
  let released = false;
  const release = () => {
    released = true;
  };
  const frame = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-gated", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const enc = new TextEncoder();
  const respond = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(c) {
          c.enqueue(enc.encode(frame({ role: "assistant", content: "" })));
          for (const [i, p] of pieces.entries()) {
            while (i >= open && !released) await sleep(5);
            c.enqueue(enc.encode(frame({ content: p })));
          }
          c.enqueue(enc.encode(frame({}, "stop")));
          c.enqueue(enc.encode("data: [DONE]\n\n"));
          c.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  return { respond, release };
}

describe("eviction", () => {
  it("between every turn of a 6-turn conversation: each reply sees the whole history", async () => {
    const thread = uniqueThread("evict");
    for (let i = 0; i < 6; i++) {
      const reply = await say(thread, `turn ${i}`);
      // The offline model reports what the thread carried into the turn.
      expect(reply).toContain(`(${2 * i} earlier message`);
      if (i > 0) expect(reply).toContain(`Earlier you said: turn ${i - 1}`);
      await evict(thread);
    }
    const msgs = await messagesOf(thread);
    expect(msgs.filter((m) => m.role === "user").map((m) => m.content)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `turn ${i}`));
    expect(msgs).toHaveLength(12);
  });

  it("while the provider call is in flight: the turn is saved on the fresh instance, after the history", async () => {
    const thread = uniqueThread("evict");
    fakeOpenAI().reply("first answer");
    await say(thread, "first", "gpt-4o-mini");
    // A plain flag polled from the worker's side: a promise resolved from the test's context would not wake it.
    let released = false;
    let reached = false;
    const fake = fakeOpenAI().respond(async (_req, body) => {
      reached = true;
      while (!released) await sleep(5);
      return Response.json({
        id: "x",
        object: "chat.completion",
        created: 1,
        model: (body as { model: string }).model,
        choices: [{ index: 0, message: { role: "assistant", content: "second answer" }, finish_reason: "stop" }],
      });
    });
    const pending = say(thread, "second", "gpt-4o-mini");
    while (!reached) await sleep(5);
    // The run lives in the thread object now, and the runtime evicts an object only once the
    // calls it serves are done: the eviction is requested mid-call and lands after the save.
    const evicting = evict(thread);
    await sleep(50);
    released = true;
    await evicting;
    expect(await pending).toBe("second answer");
    // The in-flight call carried the first turn.
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["first", "first answer", "second"]);
    await evict(thread);
    expect((await messagesOf(thread)).map((m) => m.content)).toEqual(["first", "first answer", "second", "second answer"]);
  });

  it("between streaming chunks: the client gets every chunk and [DONE], the turn is saved whole, the next turn sees it", async () => {
    const thread = uniqueThread("evict");
    fakeOpenAI().reply("one");
    await say(thread, "before the stream", "gpt-4o-mini");
    const gated = gatedStream(["Hello ", "from ", "a ", "stream"], 2);
    const fake = fakeOpenAI().respond(gated.respond).otherwise("after the stream");
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, stream: true, messages: [{ role: "user", content: "stream please" }] },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!seen.includes('"from "')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early: ${seen}`);
      seen += value;
    }
    // As above: requested mid-stream, the eviction lands once the object's run has saved.
    const evicting = evict(thread);
    await sleep(50);
    figures.streamed_evictions++;
    gated.release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
    const text = seen
      .split("\n\n")
      .filter((b) => b.startsWith("data: {"))
      .map((b) => (JSON.parse(b.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "")
      .join("");
    expect(text).toBe("Hello from a stream");
    expect(seen.trimEnd().endsWith("data: [DONE]")).toBe(true);
    await evicting;

    // Saved by finish() after the last chunk; give waitUntil a moment if the client outran it.
    let msgs = await messagesOf(thread);
    for (let i = 0; i < 20 && msgs.length < 4; i++) msgs = await new Promise((r) => setTimeout(r, 25)).then(() => messagesOf(thread));
    expect(msgs.map((m) => m.content)).toEqual(["before the stream", "one", "stream please", "Hello from a stream"]);
    await evict(thread);
    await say(thread, "and now?", "gpt-4o-mini");
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["before the stream", "one", "stream please", "Hello from a stream", "and now?"]);
  });

  it("evictions racing a burst of concurrent turns: every turn kept exactly once", async () => {
    const thread = uniqueThread("evict");
    await say(thread, "opening");
    const turns = Array.from({ length: 8 }, (_, i) => say(thread, `burst ${i}`));
    const evictions = Array.from({ length: 3 }, (_, i) => new Promise((r) => setTimeout(r, i * 5)).then(() => evict(thread)));
    await Promise.all([...turns, ...evictions]);
    const msgs = await messagesOf(thread);
    const users = msgs.filter((m) => m.role === "user").map((m) => m.content as string);
    figures.turns_lost += 9 - users.length;
    expect(users.sort()).toEqual(["opening", ...Array.from({ length: 8 }, (_, i) => `burst ${i}`)].sort());
    expect(msgs).toHaveLength(18);
    const before = await snapshot(t.adminKey, thread);
    await evict(thread);
    expect(await snapshot(t.adminKey, thread)).toEqual(before);
  });
});

afterAll(() => report("eviction", figures));
