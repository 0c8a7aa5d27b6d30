/**
 * A thread object's pending bookkeeping (src/thread/pending-bookkeeping.ts, sent by
 * src/object/bookkeeping-flush.ts on the object's alarm): every provider call is billed,
 * once, even when the send fails the first time or the thread is deleted before it.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BOOKKEEPING_FLUSH_MS } from "../../src/object/bookkeeping-flush";
import { threadObjectName } from "../../src/thread/thread-id";
import { fakeOpenAI } from "../support/fake-openai";
import { loggedLines } from "../support/logs";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

const tenant = tenantForRuns();
afterEach(() => vi.restoreAllMocks());

const billed = async () =>
  (await env.DB.prepare("SELECT COALESCE(SUM(requests), 0) AS n FROM usage WHERE tenant_id = ?").bind(tenant().tenant).first<{ n: number }>())?.n ?? 0;
const listed = async (thread: string) =>
  (await env.DB.prepare("SELECT updated_at FROM threads WHERE tenant_id = ? AND thread_id = ?").bind(tenant().tenant, thread).first<{ updated_at: number }>())
    ?.updated_at;
const turn = (thread: string, text: string) =>
  api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: text }] } });
const stubOf = (thread: string) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, thread)));

/** Two turns on a new thread: the first's usage sent as it settled, the second's waiting for the object's alarm. */
async function secondTurnPending(): Promise<{ thread: string; start: number }> {
  fakeOpenAI().reply("one").reply("two");
  const thread = uniqueThread("bk");
  const start = await billed();
  expect((await turn(thread, "first")).status).toBe(200);
  await waitFor("the first turn's usage", async () => ((await billed()) === start + 1 ? true : undefined), BOOKKEEPING_FLUSH_MS + 5_000);
  expect((await turn(thread, "second")).status).toBe(200);
  return { thread, start };
}

describe("a thread object's pending bookkeeping", () => {
  it("a send that fails keeps its rows; the retried alarm bills each call once and moves the thread's list entry", async () => {
    fakeOpenAI().reply("one").reply("two");
    const thread = uniqueThread("bk");
    const start = await billed();
    expect((await turn(thread, "first")).status).toBe(200);
    await waitFor("the first turn's usage", async () => ((await billed()) === start + 1 ? true : undefined), BOOKKEEPING_FLUSH_MS + 5_000);
    const firstListed = (await listed(thread))!;
    expect((await turn(thread, "second")).status).toBe(200);
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    vi.spyOn(db, "batch").mockImplementationOnce(() => Promise.reject(new Error("D1 is down")));
    expect(await runDurableObjectAlarm(stubOf(thread))).toBe(true);
    expect(loggedLines().join("\n")).toContain("D1 is down");
    expect(await billed()).toBe(start + 1);
    vi.mocked(db.batch).mockImplementation(batch);
    // The object set its alarm again, for BOOKKEEPING_RETRY_MS later (run here at once).
    await runDurableObjectAlarm(stubOf(thread));
    expect(await billed()).toBe(start + 2);
    expect((await listed(thread))!).toBeGreaterThan(firstListed);
  });

  it("deleting the thread sends the usage its runs owe first, and the thread stays out of the list", async () => {
    fakeOpenAI().reply("one").reply("two");
    const thread = uniqueThread("bk");
    const start = await billed();
    expect((await turn(thread, "first")).status).toBe(200);
    expect((await turn(thread, "second")).status).toBe(200);
    expect((await api(`/v1/threads/${thread}`, { key: tenant().adminKey, method: "DELETE" })).status).toBe(204);
    expect(await billed()).toBe(start + 2);
    await new Promise((r) => setTimeout(r, BOOKKEEPING_FLUSH_MS + 200));
    expect(await listed(thread)).toBeUndefined();
    expect(await billed()).toBe(start + 2);
  });

  it("a delete whose usage send fails is refused (503 BEM-171) and deletes nothing; the retried delete bills every call once", async () => {
    fakeOpenAI().reply("one").reply("two").reply("three");
    const thread = uniqueThread("bk");
    const start = await billed();
    for (const text of ["first", "second", "third"]) expect((await turn(thread, text)).status).toBe(200);
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    vi.spyOn(db, "batch").mockImplementationOnce(() => Promise.reject(new Error("D1 is down")));
    const refused = await api(`/v1/threads/${thread}`, { key: tenant().adminKey, method: "DELETE" });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("BEM-171");
    vi.mocked(db.batch).mockImplementation(batch);
    // Nothing was deleted: the thread is whole and still listed.
    const state = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey });
    expect(state.status).toBe(200);
    expect(((await state.json()) as { channels: { messages: unknown[] } }).channels.messages).toHaveLength(6);
    expect(await listed(thread)).toBeDefined();
    expect((await api(`/v1/threads/${thread}`, { key: tenant().adminKey, method: "DELETE" })).status).toBe(204);
    expect(await billed()).toBe(start + 3);
    expect(await listed(thread)).toBeUndefined();
    expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
  });

  it("a delete whose list removal fails is refused (503 BEM-171) and leaves the thread whole", async () => {
    fakeOpenAI().reply("one");
    const thread = uniqueThread("bk");
    expect((await turn(thread, "first")).status).toBe(200);
    await stubOf(thread).settled();
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    // The usage owed is sent already; the one batch the delete makes is the list removal.
    vi.spyOn(db, "batch").mockImplementationOnce(() => Promise.reject(new Error("D1 is down")));
    const refused = await api(`/v1/threads/${thread}`, { key: tenant().adminKey, method: "DELETE" });
    expect(refused.status).toBe(503);
    vi.mocked(db.batch).mockImplementation(batch);
    const state = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey });
    expect(state.status).toBe(200);
    expect(await listed(thread)).toBeDefined();
  });

  it("a delete whose list removal fails after its usage send landed keeps the thread's newest list time (the thread stays as it was)", async () => {
    const { thread, start } = await secondTurnPending();
    // The second turn's rows wait for the object's alarm; taken away here, so only the delete sends them.
    await runInDurableObject(stubOf(thread), (_o, state) => state.storage.deleteAlarm());
    const before = (await listed(thread))!;
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    let calls = 0;
    // The delete's bookkeeping send lands; its list removal (the next batch) fails.
    vi.spyOn(db, "batch").mockImplementation(function (this: D1Database, stmts) {
      return ++calls === 2 ? Promise.reject(new Error("D1 is down")) : batch.call(this, stmts);
    });
    const refused = await api(`/v1/threads/${thread}`, { key: tenant().adminKey, method: "DELETE" });
    vi.mocked(db.batch).mockImplementation(batch);
    expect(refused.status).toBe(503);
    expect(await billed()).toBe(start + 2);
    // The second turn moved the list entry: a refused delete must not drop that with the usage it sent.
    expect((await listed(thread))!).toBeGreaterThan(before);
  });

  it("a send that landed but whose answer was lost is not counted again when it is retried", async () => {
    const { thread, start } = await secondTurnPending();
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    // D1 commits the batch, then the connection drops before its answer arrives.
    vi.spyOn(db, "batch").mockImplementationOnce(async function (this: D1Database, stmts) {
      await batch.call(this, stmts);
      throw new Error("D1_ERROR: Network connection lost.");
    });
    await runDurableObjectAlarm(stubOf(thread));
    vi.mocked(db.batch).mockImplementation(batch);
    expect(await billed()).toBe(start + 2);
    // The retry (the object set its alarm again) finds the send landed and adds nothing.
    await runDurableObjectAlarm(stubOf(thread));
    expect(await billed()).toBe(start + 2);
  });

  it("rows on their way to D1 when the object went away are sent by the next instance", async () => {
    const { thread, start } = await secondTurnPending();
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    // The send never answers; the object is reset while it waits (a deploy, a crash).
    // (A flag polled from here, not a promise the object resolves: its continuation would run in the object's context.)
    let sendStarted = false;
    vi.spyOn(db, "batch").mockImplementationOnce(() => {
      sendStarted = true;
      return new Promise(() => undefined);
    });
    const stub = stubOf(thread);
    void runDurableObjectAlarm(stub).catch(() => undefined);
    for (let i = 0; i < 400 && !sendStarted; i++) await new Promise((r) => setTimeout(r, 5));
    expect(sendStarted).toBe(true);
    // A reset like a deploy's or a crash's: the instance goes, with the send it was waiting for.
    await runInDurableObject(stub, (_o, state) => state.abort("reset while sending")).catch(() => undefined);
    vi.mocked(db.batch).mockImplementation(batch);
    await runDurableObjectAlarm(stubOf(thread));
    await waitFor("the second turn's usage", async () => ((await billed()) === start + 2 ? true : undefined), BOOKKEEPING_FLUSH_MS + 5_000);
  });

  it("an alarm that fires while a delete sends the thread's usage sends nothing: the thread is not listed again after the delete", async () => {
    const { thread, start } = await secondTurnPending();
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = db.batch;
    // The delete's send (its record, one usage row and the list entry: 3 statements) and any alarm's send of the same
    // rows (3 as well, after it) each wait until let go; the list removal (4) goes through. Plain flags on both sides,
    // polled: a promise one side resolves would wake the other in the wrong context.
    const waiting: Record<number, boolean> = {};
    const go: Record<number, boolean> = {};
    let sends = 0;
    const poll = async (what: () => boolean, ms: number) => {
      for (let waited = 0; waited < ms && !what(); waited += 5) await new Promise((r) => setTimeout(r, 5));
    };
    vi.spyOn(db, "batch").mockImplementation(async function (this: D1Database, stmts) {
      if (stmts.length === 3) {
        const n = ++sends;
        waiting[n] = true;
        await poll(() => go[n] === true, 10_000);
      }
      return batch.call(this, stmts);
    });
    const deleted = api(`/v1/threads/${thread}`, { key: tenant().adminKey, method: "DELETE" });
    await poll(() => waiting[1] === true, 2_000);
    expect(waiting[1]).toBe(true);
    const alarm = runDurableObjectAlarm(stubOf(thread)).catch(() => undefined);
    await poll(() => waiting[2] === true, 300);
    go[1] = true;
    expect((await deleted).status).toBe(204);
    go[2] = true;
    await alarm;
    vi.mocked(db.batch).mockImplementation(batch);
    expect(await listed(thread)).toBeUndefined();
    expect(await billed()).toBe(start + 2);
  });
});
