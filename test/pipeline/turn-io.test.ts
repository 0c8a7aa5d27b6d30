/**
 * The I/O one stateful chat turn makes on an existing thread (issue 23 item 6), counted on the
 * bindings' own prototypes, which the Worker, the thread object and this test share (one isolate):
 * Worker→object RPCs, D1 round trips and the statements in them, SQLite statements in the object,
 * rate-limit calls and upstream calls. The counts are the contract the turn-latency bench measures.
 * D1 round trips before: 2 per turn (the facts batch of every scope, the bookkeeping batch); now none
 * in the turn, and one bookkeeping batch per thread per BOOKKEEPING_FLUSH_MS.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FACTS_CACHE_MS } from "../../src/memory/facts-cache";
import { BOOKKEEPING_FLUSH_MS } from "../../src/object/bookkeeping-flush";
import { ThreadDO } from "../../src/object/thread-object";
import { threadObjectName } from "../../src/thread/thread-id";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

const tenant = tenantForRuns();
afterEach(() => vi.restoreAllMocks());

type Counts = { rpc: string[]; d1Trips: string[]; d1Sql: string[]; sqlite: string[]; rateLimits: number };

/** Inside a counted call: D1's binding implements its methods on its session's, which must not count twice. */
let inside = false;

/** Wraps `name` on `proto` so every outermost call is recorded, then calls through. */
function count(proto: object, name: string, record: (args: unknown[], self: unknown) => void): void {
  const original = (proto as Record<string, (...a: unknown[]) => unknown>)[name]!;
  vi.spyOn(proto as Record<string, (...a: unknown[]) => unknown>, name).mockImplementation(function (this: unknown, ...args: unknown[]) {
    if (inside) return original.apply(this, args);
    record(args, this);
    inside = true;
    try {
      return original.apply(this, args);
    } finally {
      inside = false;
    }
  });
}

async function ioDuring(thread: string, fn: () => Promise<unknown>): Promise<Counts> {
  const c: Counts = { rpc: [], d1Trips: [], d1Sql: [], sqlite: [], rateLimits: 0 };
  const db = Object.getPrototypeOf(env.DB) as object;
  const session = Object.getPrototypeOf(env.DB.withSession("first-unconstrained")) as object;
  const stmt = Object.getPrototypeOf(env.DB.prepare("SELECT 1")) as object;
  const sessionStmt = Object.getPrototypeOf(env.DB.withSession("first-unconstrained").prepare("SELECT 1")) as object;
  for (const p of new Set([db, session])) {
    count(p, "prepare", ([sql]) => c.d1Sql.push(String(sql)));
    // Only batches with this tenant's rows: another file's threads may still be sending their bookkeeping (up to
    // BOOKKEEPING_FLUSH_MS after their last turn) in this shared runtime, and those are not this turn's I/O.
    count(p, "batch", ([stmts]) => {
      if ((stmts as { params?: unknown[] }[]).some((st) => st.params?.includes(tenant().tenant))) c.d1Trips.push(`batch(${(stmts as unknown[]).length})`);
    });
  }
  for (const p of new Set([stmt, sessionStmt])) for (const m of ["first", "all", "run", "raw"]) count(p, m, () => c.d1Trips.push(m));
  count(Object.getPrototypeOf(env.RATE_LIMIT_ADMIN) as object, "limit", () => c.rateLimits++);
  for (const m of ["streamTurn", "answerTurn", "getState", "write", "loadRecent", "reconcile", "getResponse"])
    count(ThreadDO.prototype, m, () => c.rpc.push(m));
  // The SqlStorage prototype, reached through the thread's own object; only its statements count (other
  // files' thread objects in this shared runtime may be sending their bookkeeping meanwhile).
  const own = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, thread)));
  const ownSql = await runInDurableObject(own, (_o, state) => state.storage.sql);
  count(Object.getPrototypeOf(ownSql) as object, "exec", ([sql], self) => {
    if (self === ownSql) c.sqlite.push(String(sql).replace(/\s+/g, " ").slice(0, 90));
  });
  await fn();
  return c;
}

/** Fact lines sent (a scope's facts of one kind travel as one message, one quoted text per line). */
const sentFacts = (body: unknown) =>
  (body as { messages: { content: unknown }[] }).messages
    .flatMap((m) => String(m.content).split("\n"))
    .filter((l) => l.startsWith("[rule organization:acme] Rule ")).length; // an admin's organization facts load as rules

const turn = (thread: string, text: string) =>
  api("/v1/chat/completions", {
    key: tenant().adminKey,
    body: { model: "gpt-4o-mini", thread_id: thread, memory_scopes: ["session", "organization:acme"], messages: [{ role: "user", content: text }] },
  });

/** Provider calls of this tenant's turns that reached its usage rows (the bookkeeping landed). */
const billed = async () =>
  (await env.DB.prepare("SELECT COALESCE(SUM(requests), 0) AS n FROM usage WHERE tenant_id = ?").bind(tenant().tenant).first<{ n: number }>())?.n ?? 0;

/**
 * Runs `scenario` (on a fresh thread each time) until its turns all fell within `windowMs` of each
 * other, then checks it: the counts hold only for turns inside the facts cache's age and the
 * bookkeeping interval, and a loaded machine (the whole suite on two cores) can stretch three turns
 * past a second. The first try that ran in time is checked (a broken cache or batch fails it); five
 * tries in a row too slow fail the test.
 */
async function withinWindow(windowMs: number, scenario: () => Promise<{ elapsedMs: number; check: () => Promise<void> | void }>) {
  const tries: string[] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    vi.restoreAllMocks();
    const { elapsedMs, check } = await scenario();
    if (elapsedMs < windowMs * 0.9) return check();
    tries.push(`${Math.round(elapsedMs)} ms`);
  }
  throw new Error(`no try of five ran within ${windowMs} ms: ${tries.join(" | ")}`);
}

describe("the I/O of one stateful chat turn on an existing thread", () => {
  it("one RPC, one rate-limit call, one upstream call, no D1 round trip: facts from the thread object's cache, bookkeeping pending in its SQLite", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await api("/v1/memory/facts", { key: tenant().adminKey, body: { scope: "organization:acme", kind: "rule", text: `Rule ${i}.` } });
      expect(res.status).toBe(201);
    }
    await withinWindow(FACTS_CACHE_MS, async () => {
      const fake = fakeOpenAI().reply("one").reply("two").reply("three");
      const thread = uniqueThread("io");
      const t0 = Date.now();
      expect((await turn(thread, "first")).status).toBe(200);
      expect((await turn(thread, "second")).status).toBe(200);
      const before = fake.calls.length;
      let elapsedMs = 0;
      const c = await ioDuring(thread, async () => {
        expect((await turn(thread, "third")).status).toBe(200);
        // Anything the turn still does after its answer is counted too. The wait is inside the window:
        // on a loaded machine it can run long enough to reach the second turn's flush alarm, whose
        // batch would then be counted as this turn's (the cause of the flake seen under the whole suite).
        await new Promise((r) => setTimeout(r, 100));
        elapsedMs = Date.now() - t0;
      });
      return {
        elapsedMs,
        check: async () => {
          console.log(`BENCH turn-io ${JSON.stringify({ ...c, upstream: fake.calls.length - before })}`);
          expect(c.rpc).toEqual(["answerTurn"]);
          expect(c.rateLimits).toBe(1);
          expect(fake.calls.length - before).toBe(1);
          expect(sentFacts(fake.calls[before]!.body)).toBe(3);
          // No facts read (the previous turn's read serves this one) and no usage write yet: no D1 at all.
          expect(c.d1Trips).toEqual([]);
          expect(c.sqlite.filter((q) => q.includes("facts_bookmark"))).toEqual([]);
          expect(c.sqlite.filter((q) => q.includes("pending_usage"))).toHaveLength(1);
          // The save: one statement for the turn's new messages and one for its writes (json-batches.ts); the history
          // total and the calls open at the tail come from memory, not a read.
          expect(c.sqlite.filter((q) => q.startsWith("INSERT INTO messages"))).toHaveLength(1);
          expect(c.sqlite.filter((q) => q.startsWith("INSERT INTO writes"))).toHaveLength(1);
          expect(
            c.sqlite.filter((q) => q.startsWith("SELECT value FROM meta WHERE key = 'history_bytes'") || q.startsWith("SELECT json FROM messages")),
          ).toEqual([]);
          // The pending bookkeeping's rows are followed in memory: the thread-list entry is written without reading it first.
          expect(c.sqlite.filter((q) => q.startsWith("SELECT value FROM meta"))).toEqual([]);
          // The run's last_route (a last_value channel this store wrote on the turn before) is set without reading it first.
          expect(c.sqlite.filter((q) => q.includes("FROM channels"))).toEqual([]);
          // Which of the turn's messages are stored already is one read for the whole save (not one per message), and the
          // head and the history total are one upsert: besides it, only the thread-list entry writes a meta row.
          expect(c.sqlite.filter((q) => q.startsWith("SELECT") && q.includes("FROM messages") && !q.startsWith("SELECT through"))).toHaveLength(1);
          expect(c.sqlite.filter((q) => q.startsWith("INSERT INTO meta"))).toHaveLength(2);
          // The save indexes nothing (recall-index.ts, v10), and the third turn's six messages are no batch yet: after the
          // answer no recall upkeep runs at all — no read of what waits (the object follows its own appends) and no merge
          // (the turns before merged what there was; test/thread/recall-upkeep.test.ts has when they run).
          expect(c.sqlite.filter((q) => q.startsWith("SELECT through") || q.includes("VALUES ('merge'") || q.includes("recall_fts"))).toEqual([]);
        },
      };
    });
    // Within the flush interval every turn's usage lands (three per try, however many tries it took).
    await waitFor("the turns' usage", async () => ((await billed()) % 3 === 0 && (await billed()) > 0 ? true : undefined), BOOKKEEPING_FLUSH_MS + 5_000);
  });

  it("the usage and thread-list writes of turns within BOOKKEEPING_FLUSH_MS leave in one D1 batch", async () => {
    await withinWindow(BOOKKEEPING_FLUSH_MS, async () => {
      fakeOpenAI().reply("one").reply("two").reply("three");
      const thread = uniqueThread("io");
      const owed = (await billed()) + 3;
      const t0 = Date.now();
      expect((await turn(thread, "first")).status).toBe(200); // creates the thread: listed at once, its usage pending
      let elapsedMs = 0;
      const c = await ioDuring(thread, async () => {
        expect((await turn(thread, "second")).status).toBe(200);
        expect((await turn(thread, "third")).status).toBe(200);
        elapsedMs = Date.now() - t0;
        await waitFor("the three turns' usage", async () => ((await billed()) >= owed ? true : undefined), BOOKKEEPING_FLUSH_MS + 5_000);
      });
      // The one batch: the send's record (bookkeeping_sends, so a retry adds nothing twice), the day's usage row (the three
      // turns added into it) and the thread list's updated_at; besides it only the polls above.
      return { elapsedMs, check: () => expect(c.d1Trips.filter((t) => t !== "first")).toEqual(["batch(3)"]) };
    });
  });

  it("a Responses turn writes its thread's head row once, its stored record charged into the same history total", async () => {
    fakeOpenAI().reply("one").reply("two");
    const key = tenant().adminKey;
    const conv = (await (await api("/v1/conversations", { key, body: { items: [{ type: "message", role: "user", content: "hi" }] } })).json()) as {
      id: string;
    };
    const respond = (input: string) => api("/v1/responses", { key, body: { model: "gpt-4o-mini", conversation: conv.id, input } });
    expect((await respond("first")).status).toBe(200);
    const c = await ioDuring(conv.id, async () => expect((await respond("second")).status).toBe(200));
    expect(c.rpc).toEqual(["answerTurn"]);
    expect(c.sqlite.filter((q) => q.startsWith("INSERT INTO meta (key, value) VALUES ('head'"))).toHaveLength(1);
    expect(c.sqlite.filter((q) => q.startsWith("INSERT INTO responses"))).toHaveLength(1);
    // Last in the file: the two turns' bookkeeping lands after it, in no other test's count.
  });
});
