/**
 * A webhook delivery's turn runs where every stateful turn runs: inside its thread's
 * Durable Object. So it reads facts at least as fresh as the thread's previous turn
 * (and moves the thread's facts bookmark on), and a turn on an existing thread makes
 * no D1 read for the thread quota. The D1 calls are counted on the binding's own
 * prototypes, which the object, the queue consumer and this test share (one isolate).
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { threadObjectName } from "../../src/thread/thread-id";
import { createTenant, type TestTenant } from "../support/tenants";
import { deliver, deliveryRow, registerHook, threadMessages, waitFor } from "./helpers";

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});
afterEach(() => vi.restoreAllMocks());

const uid = () => crypto.randomUUID().slice(0, 8);

const factsBookmark = (thread: string) =>
  runInDurableObject(
    env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, thread))),
    (_o, state) => state.storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'facts_bookmark'`).toArray()[0]?.value,
  );

async function delivered(hook: { id: string; secret: string }, thread: string, deliveryId: string, body: string) {
  expect((await deliver(hook, { ticket: { id: thread, body } }, { deliveryId })).status).toBe(202);
  return waitFor(`delivery ${deliveryId}`, async () => {
    const r = await deliveryRow(hook.id, deliveryId);
    return r?.status === "done" ? r : undefined;
  });
}

/** Every SQL text D1 is asked to prepare, and every session opened (with what it starts from), while `fn` runs. */
async function d1CallsDuring(fn: () => Promise<unknown>) {
  const sql: string[] = [];
  const sessions: string[] = [];
  const db = Object.getPrototypeOf(env.DB) as D1Database;
  const session = Object.getPrototypeOf(env.DB.withSession("first-unconstrained")) as D1DatabaseSession;
  const dbPrepare = db.prepare;
  const sessionPrepare = session.prepare;
  const withSession = db.withSession;
  vi.spyOn(db, "prepare").mockImplementation(function (this: D1Database, query: string) {
    sql.push(query);
    return dbPrepare.call(this, query);
  });
  vi.spyOn(session, "prepare").mockImplementation(function (this: D1DatabaseSession, query: string) {
    sql.push(query);
    return sessionPrepare.call(this, query);
  });
  vi.spyOn(db, "withSession").mockImplementation(function (this: D1Database, from?: string) {
    sessions.push(from ?? "(none)");
    return withSession.call(this, from);
  });
  await fn();
  return { sql, sessions };
}

describe("a webhook turn runs in its thread's object", () => {
  it("advances the thread's facts bookmark, reads facts from it, and makes no quota read on an existing thread", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    await delivered(hook, thread, `d-${uid()}`, "first");
    const kept = await factsBookmark(thread);
    expect(kept, "the first webhook turn left the thread a facts bookmark").toMatch(/^[0-9a-f]{8}-/);

    const { sql, sessions } = await d1CallsDuring(() => delivered(hook, thread, `d-${uid()}`, "second"));
    expect((await threadMessages(t, thread)).map((m) => m.content)).toContain("second");
    // The thread exists: its quota is not read again (neither the count nor the thread list).
    expect(sql.filter((q) => q.includes("tenant_counts"))).toEqual([]);
    // Facts are read from a session at least as fresh as the thread's previous turn, never "first-unconstrained".
    expect(sessions.length).toBeGreaterThan(0);
    for (const s of sessions) expect(s >= kept!, `session from ${s}`).toBe(true);
    expect((await factsBookmark(thread))! >= kept!).toBe(true);
  });
});
