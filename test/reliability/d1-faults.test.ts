/**
 * D1 failing under a turn. Storage is per test file, so this file may take
 * tables away (renamed, then put back): facts (read while loading context),
 * threads (the tenant's thread list, written after the Durable Object saves
 * the turn) and usage (recorded after the reply). Each turn must end in a
 * whole saved turn or a coded error with the thread exactly as before; no
 * internals in the error body.
 */
import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { FACTS_CACHE_MS } from "../../src/memory/facts-cache";
import { ThreadClient } from "../../src/thread/client";
import { uniqueThread } from "../support/runs";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { codedErrorProblem, report } from "./support";

let t: TestTenant;
const observed: Record<string, unknown> = {};

beforeAll(async () => {
  t = await createTenant();
});
afterEach(() => vi.restoreAllMocks());

const hide = (table: string) => env.DB.prepare(`ALTER TABLE ${table} RENAME TO ${table}_gone`).run();
const restore = (table: string) => env.DB.prepare(`ALTER TABLE ${table}_gone RENAME TO ${table}`).run();

/** The thread as the Durable Object holds it (no D1 involved). */
const doState = async (thread: string) => {
  const c = new ThreadClient(env, t.tenant, thread);
  return { state: await c.getState(), history: await c.getHistory({ limit: 100 }) };
};

async function turn(thread: string, content: string) {
  const res = await api("/v1/chat/completions", { key: t.adminKey, body: { model: "auto", thread_id: thread, messages: [{ role: "user", content }] } });
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
}

const LEAKS = /SQLITE|no such table|D1_|_gone|stack|at .*\.ts/i;

async function underMissingTable(table: string, opts: { pastFactsCache?: boolean } = {}) {
  const thread = uniqueThread("d1");
  expect((await turn(thread, "before the fault")).status).toBe(200);
  // The thread's object serves the next turn's facts from its first turn's read for FACTS_CACHE_MS;
  // waiting that out makes the faulted turn read D1.
  if (opts.pastFactsCache) await new Promise((r) => setTimeout(r, FACTS_CACHE_MS + 50));
  const before = await doState(thread);
  await hide(table);
  let res: Awaited<ReturnType<typeof turn>>;
  try {
    res = await turn(thread, "during the fault");
  } finally {
    await restore(table);
  }
  const after = await doState(thread);
  const added = after.state.channels.messages.length - before.state.channels.messages.length;
  const warnings = res.status === 200 ? ((JSON.parse(res.text) as { edgeweave?: { warnings?: string[] } }).edgeweave?.warnings ?? []) : [];
  observed[table] = {
    status: res.status,
    body: res.status === 200 ? `200 (${added} messages added, warnings ${JSON.stringify(warnings)})` : res.text.slice(0, 200),
    messages_added: added,
  };
  return { res, before, after, added, warnings };
}

describe("D1 errors during a turn: a coded error or a degraded run that says so, never half a turn", () => {
  it("facts table unreadable while loading context", async () => {
    const { res, before, after, added, warnings } = await underMissingTable("facts", { pastFactsCache: true });
    if (res.status === 200) {
      // A degraded run must say that the facts were left out.
      expect(warnings.join(" ")).toMatch(/fact/i);
      expect(added).toBe(2);
    } else {
      expect(codedErrorProblem(res)).toBeNull();
      expect(res.text).not.toMatch(LEAKS);
      expect(after).toEqual(before);
    }
  });

  it("thread list (threads table) unwritable after the turn is saved: the client is told the truth", async () => {
    const { res, before, after, added } = await underMissingTable("threads");
    if (res.status === 200) {
      expect(added).toBe(2);
    } else {
      expect(codedErrorProblem(res)).toBeNull();
      expect(res.text).not.toMatch(LEAKS);
      // A failed answer must not leave the turn saved: the client would retry and store it twice.
      expect(after).toEqual(before);
    }
  });

  it("first turn of a NEW thread while the thread list is unwritable: an error leaves nothing behind, a retry stores the turn once", async () => {
    const thread = uniqueThread("d1new");
    await hide("threads");
    let res: Awaited<ReturnType<typeof turn>>;
    try {
      res = await turn(thread, "hello");
    } finally {
      await restore("threads");
    }
    const stored = (await doState(thread)).state.channels.messages.length;
    observed.threads_new_thread = { status: res.status, body: res.text.slice(0, 200), messages_stored_in_do: stored };
    if (res.status !== 200) {
      expect(codedErrorProblem(res)).toBeNull();
      // The client was told the turn failed and will retry: the retry must not store it a second time.
      const retry = await turn(thread, "hello");
      expect(retry.status).toBe(200);
      const users = (await doState(thread)).state.channels.messages.filter((m) => m.role === "user");
      observed.threads_new_thread_after_retry = { user_messages: users.length };
      expect(users).toHaveLength(1);
    } else {
      expect(stored).toBe(2);
      expect((await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).status).toBe(200);
    }
  });

  it("usage table unwritable: the turn still succeeds and is saved whole (usage is best effort)", async () => {
    const { res, added } = await underMissingTable("usage");
    expect(res.status).toBe(200);
    expect(added).toBe(2);
  });
});

afterAll(() => report("d1_faults", observed));
