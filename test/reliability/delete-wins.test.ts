import { env } from "cloudflare:workers";
import { ThreadClient } from "../../src/thread/client";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { readSse, tenantForRuns, uniqueThread } from "../support/runs";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 25, finding 12: a thread deleted while turns on it finished came back — listed in
 * GET /v1/threads, GET /v1/conversations/{id} 200 while its state was 404 — intermittently.
 * Delete wins: a turn admitted before the delete stores nothing and lists nothing once the
 * delete has answered; a turn admitted after it starts a new thread under the same id.
 *
 * Each interleaving is fixed, not raced: the turn before the delete is held in the provider
 * (a gate the test opens) until the delete is queued behind it, so the order is always
 * turn admitted → delete requested → turn answers → delete answers.
 */
const tenant = tenantForRuns();

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

const completion = (model: string, text: string) =>
  Response.json({
    id: "chatcmpl-gated",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  });

/** Everything that could name the thread afterwards. */
async function traces(thread: string) {
  const key = tenant().adminKey;
  const listed = ((await (await api("/v1/threads?limit=100", { key })).json()) as { threads: { thread_id: string }[] }).threads.some(
    (t) => t.thread_id === thread,
  );
  const d1 = async (sql: string) => (await env.DB.prepare(sql).bind(tenant().tenant, thread).first<{ n: number }>())?.n ?? 0;
  return {
    listed,
    threadRows: await d1("SELECT COUNT(*) AS n FROM threads WHERE tenant_id = ? AND thread_id = ?"),
    conversationRows: await d1("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ? AND id = ?"),
    conversation: (await api(`/v1/conversations/${thread}`, { key })).status,
    state: (await api(`/v1/threads/${thread}/state`, { key })).status,
  };
}

const GONE = { listed: false, threadRows: 0, conversationRows: 0, conversation: 404, state: 404 };

/** Waits until the run and the delete have both answered and every write after them has landed. */
async function settled(thread: string, expected: object) {
  // Bookkeeping after an answer lands within moments; give it time to (wrongly) bring the thread back.
  await new Promise((r) => setTimeout(r, 300));
  return waitFor(
    "the thread's final state",
    async () => {
      const t = await traces(thread);
      return JSON.stringify(t) === JSON.stringify(expected) ? t : undefined;
    },
    3_000,
  ).catch(async () => traces(thread));
}

type Turn = (thread: string) => Promise<Response>;
const TURNS: Record<string, Turn> = {
  chat: (thread) =>
    api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "hi" }] } }),
  "chat, streamed": (thread) =>
    api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", stream: true, thread_id: thread, messages: [{ role: "user", content: "hi" }] },
    }),
  responses: (thread) => api("/v1/responses", { key: tenant().adminKey, body: { model: "gpt-4o-mini", input: "hi", conversation: thread } }),
};

function gatedProvider(g: { opened: Promise<void> }, text: string) {
  return fakeOpenAI().respond(async (_req, body) => {
    await g.opened;
    return completion((body as { model: string }).model, text);
  });
}

describe("delete wins over the turns that finish around it", () => {
  it("a turn admitted after the delete (queued behind it) starts a new thread holding only its own turn", async () => {
    const thread = uniqueThread("del");
    const key = tenant().adminKey;
    fakeOpenAI().reply("first");
    expect((await TURNS.chat!(thread)).status).toBe(200);
    const g = gate();
    const fake = gatedProvider(g, "before the delete");
    const before = TURNS.chat!(thread);
    await waitFor("the first turn to reach the provider", async () => (fake.calls.length === 1 ? true : undefined));
    const deleting = api(`/v1/threads/${thread}`, { key, method: "DELETE" });
    await new Promise((r) => setTimeout(r, 100));
    fakeOpenAI().reply("after the delete");
    const after = api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "again" }] } });
    await new Promise((r) => setTimeout(r, 100));
    g.open();
    expect((await before).status).toBe(200);
    expect((await deleting).status).toBe(204);
    expect((await after).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    const state = (await (await api(`/v1/threads/${thread}/state`, { key })).json()) as { channels: { messages: { content: unknown }[] } };
    expect(state.channels.messages.map((m) => m.content)).toEqual(["again", "after the delete"]);
    expect((await traces(thread)).listed).toBe(true);
  });

  it("a Responses turn's stored response goes with the thread deleted while it ran", async () => {
    const thread = uniqueThread("del");
    const key = tenant().adminKey;
    fakeOpenAI().reply("first");
    expect((await TURNS.chat!(thread)).status).toBe(200);
    const g = gate();
    const fake = gatedProvider(g, "during");
    const running = TURNS.responses!(thread);
    await waitFor("the turn to reach the provider", async () => (fake.calls.length === 1 ? true : undefined));
    const deleting = api(`/v1/threads/${thread}`, { key, method: "DELETE" });
    await new Promise((r) => setTimeout(r, 100));
    g.open();
    const made = (await (await running).json()) as { id: string };
    expect((await deleting).status).toBe(204);
    await new Promise((r) => setTimeout(r, 300));
    expect((await api(`/v1/responses/${made.id}`, { key })).status).toBe(404);
    expect(await traces(thread)).toEqual(GONE);
  });

  for (const [name, turn] of Object.entries(TURNS))
    for (const how of ["DELETE /v1/threads/:id", "DELETE /v1/conversations/:id"] as const)
      it(`${name}, then ${how} while it runs: nothing of the thread is left, and a turn after the delete starts it anew`, async () => {
        const thread = uniqueThread("del");
        const key = tenant().adminKey;
        // The thread exists (one turn), so both deletes apply to it.
        fakeOpenAI().reply("first");
        expect((await TURNS.chat!(thread)).status).toBe(200);

        const g = gate();
        const fake = fakeOpenAI().respond(async (_req, body) => {
          await g.opened;
          const model = (body as { model: string; stream?: boolean }).model;
          if (!(body as { stream?: boolean }).stream) return completion(model, "during");
          const chunk = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
          return new Response(
            chunk({
              id: "c",
              object: "chat.completion.chunk",
              created: 1,
              model,
              choices: [{ index: 0, delta: { role: "assistant", content: "during" }, finish_reason: null }],
            }) +
              chunk({ id: "c", object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
              "data: [DONE]\n\n",
            { headers: { "content-type": "text/event-stream" } },
          );
        });
        const running = turn(thread);
        await waitFor("the turn to reach the provider", async () => (fake.calls.length === 1 ? true : undefined));
        const path = how === "DELETE /v1/threads/:id" ? `/v1/threads/${thread}` : `/v1/conversations/${thread}`;
        const deleting = api(path, { key, method: "DELETE" });
        await new Promise((r) => setTimeout(r, 100)); // the delete is queued behind the running turn
        g.open();
        const answered = await running;
        if (name === "chat, streamed") await readSse(answered);
        else await answered.text();
        expect((await deleting).status).toBeLessThan(300);
        expect(await settled(thread, GONE)).toEqual(GONE);

        // A turn after the delete (a chat: a deleted conversation is gone, 404 BEM-102): a new thread under the same id, holding only its own turn.
        fakeOpenAI().reply("anew");
        const after = await TURNS.chat!(thread);
        expect(after.status).toBe(200);
        const state = (await (await api(`/v1/threads/${thread}/state`, { key })).json()) as { channels: { messages: { content: unknown }[] } };
        expect(state.channels.messages.map((m) => m.content)).toEqual(["hi", "anew"]);
        expect((await traces(thread)).listed).toBe(true);
      });
});

/**
 * A write made from outside the object (a repair, a fork, a conversation's items, through ThreadClient)
 * had its list entry written by the Worker once the object answered, outside the thread's lease: a
 * delete queued behind the write could forget the thread first, and the entry land after it — a deleted
 * thread listed again (GET /v1/threads) while its state is 404. The Worker here is slow to reach D1
 * (its every statement held back until the delete has answered): whatever it does with D1 must not
 * decide the thread's list entry.
 */
describe("delete wins over a write from outside the object that answered just before it", () => {
  /** `env` whose D1 statements run only once `until` has settled. */
  const slowD1 = (until: Promise<unknown>): Env => {
    const db = env.DB;
    const held = (stmt: D1PreparedStatement): D1PreparedStatement =>
      new Proxy(stmt, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver) as unknown;
          if (prop === "bind") return (...args: unknown[]) => held(target.bind(...args));
          if (prop === "run" || prop === "all" || prop === "first" || prop === "raw")
            return async (...args: unknown[]) => {
              await until.catch(() => undefined);
              return (v as (...a: unknown[]) => unknown).apply(target, args);
            };
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    return { ...env, DB: new Proxy(db, { get: (t, p) => (p === "prepare" ? (q: string) => held(t.prepare(q)) : Reflect.get(t, p)) }) } as Env;
  };

  for (const what of ["repair", "fork"] as const)
    it(`a ${what}, then a delete: the thread stays deleted, whenever the writer's own D1 statements land`, async () => {
      const key = tenant().adminKey;
      const thread = uniqueThread("del-w");
      const set = (v: string) => api(`/v1/threads/${thread}/state`, { key, body: { ops: [{ op: "set", channel: "topic", value: v }] } });
      expect((await set("one")).status).toBe(200);
      const first = ((await (await api(`/v1/threads/${thread}/history`, { key })).json()) as { checkpoints: { id: string }[] }).checkpoints.at(-1)!.id;
      expect((await set("two")).status).toBe(200);

      const g = gate();
      const writer = new ThreadClient(slowD1(g.opened), tenant().tenant, thread);
      const written = what === "repair" ? writer.update([{ op: "set", channel: "topic", value: "three" }], "update") : writer.fork(first);
      // The write has landed in the object when its history shows it; then the delete, answered before the writer's D1 work.
      await waitFor("the write to land", async () => {
        const h = (await (await api(`/v1/threads/${thread}/history`, { key })).json()) as { checkpoints: unknown[] };
        return h.checkpoints.length === 3 ? true : undefined;
      });
      expect((await api(`/v1/threads/${thread}`, { key, method: "DELETE" })).status).toBe(204);
      g.open();
      await written;
      expect(await settled(thread, GONE)).toEqual(GONE);
    });
});
