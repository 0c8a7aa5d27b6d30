/**
 * The thread object's facts cache (src/memory/facts-cache.ts): a scope's facts as the thread's last
 * read returned them serve its next turns while younger than FACTS_CACHE_MS and at least as fresh
 * as the bookmark the turn must honour. So a client that sends back its write's bookmark sees the
 * write at once, a fact written elsewhere reaches the thread within the bound, and a fact the agent
 * itself remembers (memory tools, inside the object) is in the very next turn.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FACTS_CACHE_MS, FactsCache } from "../../src/memory/facts-cache";
import { openThreadMeta } from "../../src/thread/sql-schema";
import { threadObjectName } from "../../src/thread/thread-id";
import type { Fact } from "../../src/memory/facts";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";
import { api } from "../support/tenants";

const H = "X-Edgeweave-Bookmark";
const tenant = tenantForRuns();

const fact = (text: string): Fact =>
  ({ id: text, scope: "organization:acme", kind: "rule", text, tokens: 5, created_at: 1, key: null, expires_at: null, updated_at: 1, version: 1 }) as Fact;

describe("FactsCache: the rule", () => {
  it("serves an entry younger than the bound whose read is at least as fresh as the run's bookmark", () => {
    let now = 1_000;
    const cache = new FactsCache(FACTS_CACHE_MS, () => now);
    const writer = cache.forRun(undefined, () => "00000002-00000000-00000000-aa");
    writer.put("t", "organization:acme", [fact("a")], now);
    // No bookmark to honour, or an older or equal one: served.
    expect(
      cache
        .forRun(undefined, () => undefined)
        .get("t", "organization:acme")
        ?.map((f) => f.text),
    ).toEqual(["a"]);
    expect(cache.forRun("00000001-00000000-00000000-ff", () => undefined).get("t", "organization:acme")).toBeDefined();
    expect(cache.forRun("00000002-00000000-00000000-aa", () => undefined).get("t", "organization:acme")).toBeDefined();
    // A newer bookmark (a client's own write since): not served.
    expect(cache.forRun("00000002-00000000-00000001-00", () => undefined).get("t", "organization:acme")).toBeUndefined();
    // Other scopes, other owners: nothing.
    expect(cache.forRun(undefined, () => undefined).get("t", "organization:other")).toBeUndefined();
    expect(cache.forRun(undefined, () => undefined).get("", "organization:acme")).toBeUndefined();
    // At the bound it is gone.
    now += FACTS_CACHE_MS - 1;
    expect(cache.forRun(undefined, () => undefined).get("t", "organization:acme")).toBeDefined();
    now += 1;
    expect(cache.forRun(undefined, () => undefined).get("t", "organization:acme")).toBeUndefined();
  });

  it("an entry read without a bookmark serves only runs that need none; clear() drops everything", () => {
    const cache = new FactsCache(FACTS_CACHE_MS, () => 0);
    cache.forRun(undefined, () => undefined).put("t", "s", [fact("a")], 0);
    expect(cache.forRun("00000001-00000000-00000000-00", () => undefined).get("t", "s")).toBeUndefined();
    const run = cache.forRun(undefined, () => undefined);
    expect(run.get("t", "s")).toBeDefined();
    run.clear();
    expect(run.get("t", "s")).toBeUndefined();
  });

  it("at its cap of 64 scopes it drops the least recently used one, not every entry", () => {
    const cache = new FactsCache(FACTS_CACHE_MS, () => 0);
    const run = cache.forRun(undefined, () => undefined);
    for (let i = 0; i < 64; i++) run.put("t", `s${i}`, [fact(`f${i}`)], 0);
    // s0 is read (used), s1 rewritten: the oldest use is now s2's.
    expect(run.get("t", "s0")).toBeDefined();
    run.put("t", "s1", [fact("f1b")], 0);
    run.put("t", "s64", [fact("f64")], 0);
    expect(run.get("t", "s2")).toBeUndefined();
    for (const i of [0, 1, 3, 63, 64]) expect(run.get("t", `s${i}`), `s${i}`).toBeDefined();
    expect(run.get("t", "s1")?.map((f) => f.text)).toEqual(["f1b"]);
    run.put("t", "s65", [fact("f65")], 0);
    // Next oldest: s4 (s3 was read since).
    expect(run.get("t", "s4")).toBeUndefined();
    expect(run.get("t", "s3")).toBeDefined();
    expect(run.get("t", "s5")).toBeDefined();
  });
});

type Body = { model: string; messages: { role: string; content: unknown }[] };
const sentText = (body: unknown) =>
  wireMessages(body as Body)
    .map(wireText)
    .join("\n");
const turn = (thread: string, text: string, headers: Record<string, string> = {}) =>
  api("/v1/chat/completions", {
    key: tenant().adminKey,
    headers,
    body: { model: "gpt-4o-mini", thread_id: thread, memory_scopes: ["session", "organization:acme"], messages: [{ role: "user", content: text }] },
  });
const remember = async (text: string) => {
  const res = await api("/v1/memory/facts", { key: tenant().adminKey, body: { scope: "organization:acme", kind: "rule", text } });
  expect(res.status).toBe(201);
  return { id: ((await res.json()) as { id: string }).id, bookmark: res.headers.get(H)! };
};

describe("the facts cache through turns", () => {
  it("a turn that carries the bookmark of a write made after the cached read sees that write", async () => {
    await remember("Cached rule.");
    const fake = fakeOpenAI().reply("one").reply("two");
    const thread = uniqueThread("fc");
    expect((await turn(thread, "first")).status).toBe(200);
    const written = await remember("Written after the read.");
    expect((await turn(thread, "second", { [H]: written.bookmark })).status).toBe(200);
    expect(sentText(fake.calls[1]!.body)).toContain("Written after the read.");
  });

  it("a turn that carries the bookmark of a delete made after the cached read does not see the deleted fact", async () => {
    const fake = fakeOpenAI().reply("one").reply("two");
    const thread = uniqueThread("fc");
    const doomed = await remember("Deleted after the read.");
    expect((await turn(thread, "first", { [H]: doomed.bookmark })).status).toBe(200);
    expect(sentText(fake.calls[0]!.body)).toContain("Deleted after the read.");
    const gone = await api(`/v1/memory/facts/${doomed.id}`, { key: tenant().adminKey, method: "DELETE" });
    expect(gone.status).toBe(200);
    expect((await turn(thread, "second", { [H]: gone.headers.get(H)! })).status).toBe(200);
    expect(sentText(fake.calls[1]!.body)).not.toContain("Deleted after the read.");
  });

  it("a fact written or deleted by another path, without its bookmark, reaches the thread's turns within FACTS_CACHE_MS", async () => {
    const fake = fakeOpenAI().reply("one").reply("two").reply("three");
    const thread = uniqueThread("fc");
    const old = await remember("About to be deleted.");
    expect((await turn(thread, "first")).status).toBe(200);
    expect(sentText(fake.calls[0]!.body)).toContain("About to be deleted.");
    await remember("Written elsewhere.");
    expect((await api(`/v1/memory/facts/${old.id}`, { key: tenant().adminKey, method: "DELETE" })).status).toBe(200);
    await new Promise((r) => setTimeout(r, FACTS_CACHE_MS + 50));
    expect((await turn(thread, "second")).status).toBe(200);
    const sent = sentText(fake.calls[1]!.body);
    expect(sent).toContain("Written elsewhere.");
    expect(sent).not.toContain("About to be deleted.");
  });

  it("a fact the agent remembers with its memory tool is in the next turn at once", async () => {
    const thread = uniqueThread("fc");
    const chat = (content: string) =>
      api("/v1/chat/completions", {
        key: tenant().adminKey,
        body: { model: "gpt-4o-mini", agent: "memory-assistant", thread_id: thread, messages: [{ role: "user", content }] },
      });
    const fake = fakeOpenAI()
      .reply("hello")
      .reply({ tool_calls: [{ id: "c1", name: "remember", arguments: { kind: "profile", text: "The user's cat is called Miso." } }] })
      .reply("Noted.")
      .reply("Miso.");
    expect((await chat("hi")).status).toBe(200);
    expect((await chat("My cat is Miso.")).status).toBe(200);
    expect((await chat("What is my cat called?")).status).toBe(200);
    expect(sentText(fake.calls[3]!.body)).toContain("The user's cat is called Miso.");
  });

  it.each([
    { ending: "the turn answers", status: 200 },
    { ending: "the turn then fails (the next model call does)", status: 502 },
  ])("a fact the agent remembers moves the thread's bookmark past its write, so the next turn reads it on any replica: $ending", async ({ status }) => {
    const thread = uniqueThread("fc");
    // The primary's position while the model is first asked: before the tool's write, after the turn's facts read.
    let beforeWrite: string | undefined;
    const primaryNow = async () => {
      const s = env.DB.withSession("first-primary");
      await s.prepare("SELECT 1").run();
      return s.getBookmark() ?? undefined;
    };
    const fake = fakeOpenAI().respond(async (_req, body) => {
      beforeWrite = await primaryNow();
      return Response.json({
        id: "chatcmpl-bm",
        object: "chat.completion",
        created: 1,
        model: (body as { model: string }).model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "c1", type: "function", function: { name: "remember", arguments: JSON.stringify({ kind: "profile", text: "Likes tea." }) } }],
            },
            finish_reason: "tool_calls",
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
      });
    });
    if (status === 200) fake.reply("Noted.");
    else fake.status(500).status(500).status(500).status(500);
    const res = await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", agent: "memory-assistant", thread_id: thread, messages: [{ role: "user", content: "I like tea." }] },
    });
    expect(res.status).toBe(status);
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, thread)));
    await stub.settled();
    const kept = await runInDurableObject(stub, (_o, state) => openThreadMeta(state.storage).factsBookmark());
    expect(beforeWrite).toBeDefined();
    // A session started from the kept bookmark reads at least the write (D1 bookmarks order as strings).
    expect(kept! > beforeWrite!).toBe(true);
  });
});
