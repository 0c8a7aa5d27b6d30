/**
 * Stateful turns run inside the thread's Durable Object (src/object/thread-object.ts):
 * the Worker hands the run over in one RPC and reads an event stream back.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readEvents, type TurnEvent } from "../../src/pipeline/turn-wire";
import { ThreadClient } from "../../src/thread/client";
import { threadObjectName } from "../../src/thread/thread-id";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread } from "../support/runs";

const tenant = tenantForRuns();
const stubFor = (tenantId: string, thread: string) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenantId, thread)));
const contents = async (thread: string) => (await new ThreadClient(env, tenant().tenant, thread).getState()).channels.messages.map((m) => m.content);
const principal = () => ({ kind: "tenant" as const, tenant: tenant().tenant, role: "admin" as const, keyId: "k-test", grants: ["*"] });

async function events(body: ReadableStream<Uint8Array>): Promise<TurnEvent[]> {
  const out: TurnEvent[] = [];
  for await (const ev of readEvents(body)) out.push(ev);
  return out;
}

describe("the run inside the thread object", () => {
  it("answers start, deltas and done on one stream, and the turn is saved in the object", async () => {
    fakeOpenAI().reply({ text: "Hello there", chunks: ["Hello ", "there"] });
    const thread = uniqueThread("obj");
    const body = await stubFor(tenant().tenant, thread).streamTurn({
      input: { principal: principal(), threadId: thread, model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      stream: true,
      threadQuota: 100_000,
      responseThreadQuota: 100_000,
      scopes: [`session:${thread}`],
    });
    const evs = await events(body);
    expect(evs.map((e) => e.t)).toEqual(["start", "delta", "delta", "done"]);
    const done = evs.at(-1) as TurnEvent & { t: "done" };
    expect(done.result.reply.content).toBe("Hello there");
    expect(done.result.threadId).toBe(thread);
    expect(await contents(thread)).toEqual(["hi", "Hello there"]);
  });

  it("refuses a run meant for another thread or tenant: nothing runs, nothing is saved", async () => {
    const fake = fakeOpenAI().reply("never");
    const thread = uniqueThread("obj");
    const wrongObject = stubFor(tenant().tenant, `${thread}-other`);
    const evs = await events(
      await wrongObject.streamTurn({
        input: { principal: principal(), threadId: thread, model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
        stream: false,
        threadQuota: 100_000,
        responseThreadQuota: 100_000,
        scopes: [`session:${thread}`],
      }),
    );
    expect(evs).toEqual([{ t: "error", error: { code: "BEM-001", message: "Internal error", internal: "run sent to the wrong thread object" } }]);
    expect(fake.calls).toHaveLength(0);
    expect(await contents(`${thread}-other`)).toEqual([]);
  });

  it("keeps running and saves when its reader goes away after the first event", async () => {
    let released = false;
    fakeOpenAI().respond(async () => {
      while (!released) await new Promise((r) => setTimeout(r, 5));
      return Response.json({
        id: "x",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o-mini",
        choices: [{ index: 0, message: { role: "assistant", content: "kept" }, finish_reason: "stop" }],
      });
    });
    const thread = uniqueThread("obj");
    const stub = stubFor(tenant().tenant, thread);
    const body = await stub.streamTurn({
      input: { principal: principal(), threadId: thread, model: "gpt-4o-mini", messages: [{ role: "user", content: "stay" }] },
      stream: false,
      threadQuota: 100_000,
      responseThreadQuota: 100_000,
      scopes: [`session:${thread}`],
    });
    await body.cancel();
    released = true;
    let messages: unknown[] = [];
    for (let i = 0; i < 100 && messages.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
      messages = await contents(thread);
    }
    expect(messages).toEqual(["stay", "kept"]);
  });
});
