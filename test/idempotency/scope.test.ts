import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_LEASE_MS, requestFingerprint } from "../../src/edge/idempotency";
import { claim, scopedKey } from "../../src/idempotency/store";
import { fakeOpenAI, slowCompletion } from "../support/fake-openai";
import { api, createKey } from "../support/tenants";
import { messageCount as countMessages, tenantForRuns, uniqueThread } from "../support/runs";

/**
 * Issue 25, finding 8: what an Idempotency-Key record covers and keeps.
 * - the hash covered route, key and body, not the headers that select what a request does
 *   (X-Thread-Id, X-Edgeweave-*, Anthropic's x-claude-code-session-id): the same key and body
 *   on another thread replayed the first thread's answer, and the second never got its turn;
 * - a replay kept only a few response headers (the bookmark of a fact write was lost);
 * - keys were per tenant: one key's use of a value made another key's request fail, and told it
 *   the value was used;
 * - after a holder died (kill -9), a retry waited 30 s for 409 BEM-107, for up to 5 minutes.
 */
const tenant = tenantForRuns();
const idem = () => `idem-${crypto.randomUUID()}`;
const chat = (text = "hello") => ({ model: "gpt-4o-mini", messages: [{ role: "user", content: text }] });
const post = (path: string, body: unknown, headers: Record<string, string>, key = tenant().adminKey) => api(path, { key, body, headers });

const messageCount = (thread: string) => countMessages(tenant().adminKey, thread);

const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe("Idempotency-Key covers every input that selects what a request does", () => {
  it("the same key and body on another X-Thread-Id is another request (422 BEM-106), never the first thread's answer", async () => {
    const fake = fakeOpenAI().reply("for thread A").reply("for thread B");
    const [a, b] = [uniqueThread(), uniqueThread()];
    const k = idem();
    expect((await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": a })).status).toBe(200);
    const other = await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": b });
    expect(other.status).toBe(422);
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect(await codeOf(other)).toBe("BEM-106");
    expect(fake.calls).toHaveLength(1);
    expect([await messageCount(a), await messageCount(b)]).toEqual([2, 0]);
    // With a fresh key, thread B gets its own turn.
    expect((await post("/v1/chat/completions", chat(), { "idempotency-key": idem(), "x-thread-id": b })).status).toBe(200);
    expect(await messageCount(b)).toBe(2);
  });

  it("a header naming a thread outside the grants is not answered with a replay of another thread", async () => {
    fakeOpenAI().reply("for a reachable thread");
    const member = await createKey(tenant().tenant, { role: "member", scopes: ["session:mine-*"] });
    const k = idem();
    const mine = `mine-${crypto.randomUUID().slice(0, 8)}`;
    expect((await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": mine }, member.key)).status).toBe(200);
    const outside = await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": "ceo-thread" }, member.key);
    expect(outside.status).not.toBe(200);
    expect(outside.headers.get("idempotent-replayed")).toBeNull();
  });

  for (const [name, first, second] of [
    ["X-Edgeweave-Trace", { "x-edgeweave-trace": "summary" }, { "x-edgeweave-trace": "full" }],
    ["x-claude-code-session-id", { "x-claude-code-session-id": "s-1" }, { "x-claude-code-session-id": "s-2" }],
    ["a header present once, absent after", { "x-edgeweave-trace": "full" }, {}],
  ] as const)
    it(`${name}: a different value is a different request (422 BEM-106)`, async () => {
      const fake = fakeOpenAI().reply("one").reply("two");
      const k = idem();
      const thread = uniqueThread();
      expect((await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": thread, ...first })).status).toBe(200);
      const again = await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": thread, ...second });
      expect(again.status).toBe(422);
      expect(fake.calls).toHaveLength(1);
      // The same headers again are the same request: a replay.
      const same = await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": thread, ...first });
      expect(same.headers.get("idempotent-replayed")).toBe("true");
    });

  it("headers a request does not select by (user-agent, accept, retry counters) do not change it", async () => {
    const fake = fakeOpenAI().reply("once");
    const k = idem();
    const thread = uniqueThread();
    await post("/v1/chat/completions", chat(), { "idempotency-key": k, "x-thread-id": thread, "user-agent": "a/1", "x-stainless-retry-count": "0" });
    const retry = await post("/v1/chat/completions", chat(), {
      "idempotency-key": k,
      "x-thread-id": thread,
      "user-agent": "a/2",
      "x-stainless-retry-count": "1",
    });
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(fake.calls).toHaveLength(1);
  });
});

describe("a replay keeps every header a client reads", () => {
  it("a fact write's X-Edgeweave-Bookmark and a run's X-Edgeweave-* headers come back on the replay", async () => {
    const k = idem();
    const fact = { scope: "organization:acme", kind: "style", text: `Be brief ${crypto.randomUUID()}.` };
    const first = await post("/v1/memory/facts", fact, { "idempotency-key": k });
    expect(first.status).toBe(201);
    const bookmark = first.headers.get("x-edgeweave-bookmark");
    expect(bookmark).toBeTruthy();
    const replayed = await post("/v1/memory/facts", fact, { "idempotency-key": k });
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed.headers.get("x-edgeweave-bookmark")).toBe(bookmark);

    fakeOpenAI().reply("headers");
    const runHeaders = { "idempotency-key": idem(), "x-thread-id": uniqueThread() };
    const run = await post("/v1/chat/completions", chat(), runHeaders);
    const mine = (h: Headers) => [...h.entries()].filter(([n]) => n.startsWith("x-edgeweave-") || n === "content-type").sort(([x], [y]) => x.localeCompare(y));
    expect(mine(run.headers).length).toBeGreaterThanOrEqual(3);
    const replay = await post("/v1/chat/completions", chat(), runHeaders);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(mine(replay.headers)).toEqual(mine(run.headers));
  });
});

describe("Idempotency-Key records are per API key", () => {
  it("another key of the tenant with the same value runs its own request and learns nothing of the first", async () => {
    const fake = fakeOpenAI().reply("admin's").reply("member's");
    const member = await createKey(tenant().tenant, { role: "member", scopes: ["session:*"] });
    const k = idem();
    const [a, b] = [uniqueThread(), uniqueThread()];
    expect((await post("/v1/chat/completions", chat("mine"), { "idempotency-key": k, "x-thread-id": a })).status).toBe(200);
    const theirs = await post("/v1/chat/completions", chat("theirs"), { "idempotency-key": k, "x-thread-id": b }, member.key);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(fake.calls).toHaveLength(2);
    // And each key's own retry replays its own result.
    const retry = await post("/v1/chat/completions", chat("theirs"), { "idempotency-key": k, "x-thread-id": b }, member.key);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(fake.calls).toHaveLength(2);
  });
});

describe("a dead holder is detected within its lease", () => {
  it("a request whose holder died (its claim never renewed) is taken over within the lease, not 409 after 30 s", async () => {
    const fake = fakeOpenAI().reply("ran once the holder was gone");
    const k = idem();
    const thread = uniqueThread();
    const headers = { "idempotency-key": k, "x-thread-id": thread };
    const body = JSON.stringify(chat());
    // What a holder killed leaves behind: a claim it renewed for the last time a lease ago, less
    // `left` (so the test waits `left`, not the whole lease, for it to lapse).
    const fingerprint = await requestFingerprint({ route: "/v1/chat/completions", keyId: tenant().adminKeyId, headers: new Headers(headers), body });
    expect(IDEMPOTENCY_LEASE_MS).toBeLessThanOrEqual(15_000);
    const left = 1_500;
    expect((await claim(env.DB, tenant().tenant, scopedKey(tenant().adminKeyId, k), "/v1/chat/completions", fingerprint, left)).kind).toBe("owner");
    const started = Date.now();
    const retry = await post("/v1/chat/completions", chat(), headers);
    expect(retry.status, await retry.clone().text()).toBe(200);
    // It waited for the claim to lapse (not a 409 after 30 s, not a run beside a live holder).
    expect(Date.now() - started).toBeGreaterThanOrEqual(left - 100);
    expect(Date.now() - started).toBeLessThan(left + 3_000);
    expect(fake.calls).toHaveLength(1);
  }, 40_000);

  it("a live holder that runs longer than the lease keeps renewing it: its duplicate waits and replays, one turn", async () => {
    const fake = fakeOpenAI().respond(slowCompletion(IDEMPOTENCY_LEASE_MS + 2_000));
    const thread = uniqueThread();
    const headers = { "idempotency-key": idem(), "x-thread-id": thread };
    const first = post("/v1/chat/completions", chat(), headers);
    await new Promise((r) => setTimeout(r, 500));
    const second = await post("/v1/chat/completions", chat(), headers);
    const a = await first;
    expect([a.status, second.status]).toEqual([200, 200]);
    expect(await second.text()).toBe(await a.text());
    expect(fake.calls).toHaveLength(1);
    expect(await messageCount(thread)).toBe(2);
  }, 40_000);
});

describe("a duplicate's wait for a running holder", () => {
  it("checks the claim a few times a second at most, not every 50 ms: a duplicate costs the shared D1 a few statements, not ~1,200 over its 30 s", async () => {
    // Every check is an INSERT … ON CONFLICT on the primary and a SELECT: at 50 ms, one duplicate charged once
    // made ~600 checks while it waited, and a member key's allowance of duplicates a minute ~72,000.
    fakeOpenAI().reply("ran once the holder was gone");
    const k = idem();
    const headers = { "idempotency-key": k, "x-thread-id": uniqueThread() };
    const fingerprint = await requestFingerprint({
      route: "/v1/chat/completions",
      keyId: tenant().adminKeyId,
      headers: new Headers(headers),
      body: JSON.stringify(chat()),
    });
    const hold = 4_000;
    expect((await claim(env.DB, tenant().tenant, scopedKey(tenant().adminKeyId, k), "/v1/chat/completions", fingerprint, hold)).kind).toBe("owner");
    const d1 = Object.getPrototypeOf(env.DB) as { prepare(sql: string): unknown };
    const prepare = d1.prepare;
    let claims = 0;
    d1.prepare = function (this: unknown, sql: string) {
      if (sql.startsWith("INSERT INTO idempotency_keys")) claims++;
      return prepare.call(this, sql);
    };
    try {
      const started = Date.now();
      const res = await post("/v1/chat/completions", chat(), headers);
      expect(res.status).toBe(200);
      // Taken over once the lease lapsed, within a second of it.
      expect(Date.now() - started).toBeLessThan(hold + 1_500);
    } finally {
      d1.prepare = prepare;
    }
    expect(claims).toBeGreaterThan(1);
    expect(claims).toBeLessThanOrEqual(12);
  }, 20_000);
});
