/**
 * Turns on one thread run one at a time (the thread's run lease): concurrent
 * chat turns each see every turn saved before them, a failed run hands the
 * thread on at once, and a streamed run holds it until its save — even when
 * the client goes away mid-stream.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ThreadDO } from "../../src/object/thread-object";
import { threadObjectName } from "../../src/thread/thread-id";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";

const tenant = tenantForRuns();

type Stored = { role: string; content: string };

const stubFor = (thread: string) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, thread)));

/** The thread's lease and its queue, read in its live object. */
const leaseOf = (thread: string) => runInDurableObject(stubFor(thread), (o: ThreadDO) => ({ lease: o.leases.live(), waiting: o.leases.waiting }));

async function stored(thread: string): Promise<Stored[]> {
  const res = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey });
  return ((await res.json()) as { channels: { messages: Stored[] } }).channels.messages;
}

const turn = (thread: string, content: string, stream = false) =>
  api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", thread_id: thread, stream, messages: [{ role: "user", content }] } });

/**
 * An OpenAI-format SSE body the test feeds by hand. The stream itself is made
 * inside the upstream handler (I/O objects belong to the request that made
 * them); the test only hands it plain strings through an array the stream polls.
 */
function manualStream() {
  const queue: (string | null)[] = [];
  const push = (s: string | null) => void queue.push(s);
  const frame = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-manual", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return {
    response: () => {
      const enc = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async pull(ctl) {
          // Polled, not awaited on a promise the test resolves: a promise fulfilled from another context is cross-request I/O.
          while (queue.length === 0) await new Promise<void>((r) => setTimeout(r, 2));
          const next = queue.shift()!;
          if (next === null) ctl.close();
          else ctl.enqueue(enc.encode(next));
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
    send: (text: string) => push(frame({ content: text })),
    finish: () => {
      push(frame({}, "stop"));
      push("data: [DONE]\n\n");
      push(null);
    },
  };
}

async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("serial turns on one thread", () => {
  it("10 concurrent turns (half streamed): 20 messages, and each upstream request carried every earlier turn", async () => {
    const fake = fakeOpenAI().otherwise("ok");
    const thread = uniqueThread("serial");
    // Each client reads its answer as it comes (a stream nobody reads holds its run, and so the thread).
    const res = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const r = await turn(thread, `q${i}`, i % 2 === 1);
        return { status: r.status, body: await r.text() };
      }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(res.filter((r, i) => i % 2 === 1 && r.body.trimEnd().endsWith("data: [DONE]"))).toHaveLength(5);

    const msgs = await stored(thread);
    expect(msgs).toHaveLength(20);
    const sent = fake.calls.map((c) => wireMessages(c.body));
    // One request per turn, with 1, 3, 5, … 19 messages: never a stale window.
    expect(sent.map((m) => m.length).sort((a, b) => a - b)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    for (const wire of sent) {
      // Exactly the thread as saved before this turn, then this turn's input (which is stored next).
      expect(wire.map((m) => `${m.role}:${wireText(m)}`)).toEqual(msgs.slice(0, wire.length).map((m) => `${m.role}:${m.content}`));
    }
    expect(await leaseOf(thread)).toEqual({ lease: null, waiting: 0 });
  });

  it("a failed run (upstream 401 → 424) saves nothing and releases the thread at once", async () => {
    const fake = fakeOpenAI().status(401).reply("second");
    const thread = uniqueThread("fail");
    const failed = await turn(thread, "first");
    expect(failed.status).toBe(424);
    expect(await leaseOf(thread)).toEqual({ lease: null, waiting: 0 });
    const ok = await turn(thread, "again");
    expect(ok.status).toBe(200);
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["again"]);
    expect((await stored(thread)).map((m) => m.content)).toEqual(["again", "second"]);
  });

  it("a streamed turn holds the thread until its save, and still saves when the client leaves mid-stream", async () => {
    const manual = manualStream();
    const fake = fakeOpenAI().respond(manual.response).reply("after");
    const thread = uniqueThread("stream");
    manual.send("part one, "); // the response starts with the first upstream event
    const first = await turn(thread, "streamed", true);
    expect(first.status).toBe(200);
    const reader = first.body!.getReader();
    await reader.read(); // the stream is live: the run is mid-reply
    expect((await leaseOf(thread)).lease).not.toBeNull();

    const second = turn(thread, "next");
    await until(async () => (await leaseOf(thread)).waiting === 1, "the second turn to queue");
    await reader.cancel(); // the client goes away; the run goes on under waitUntil
    manual.send("part two");
    manual.finish();

    const res = await second;
    expect(res.status).toBe(200);
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["streamed", "part one, part two", "next"]);
    expect((await stored(thread)).map((m) => m.content)).toEqual(["streamed", "part one, part two", "next", "after"]);
  });
});
