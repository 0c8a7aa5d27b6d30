import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createKey } from "../support/tenants";
import { openaiClient, snapshot, tenantForRuns } from "../support/runs";
import { settleBookkeeping } from "../support/bookkeeping";

/**
 * A conversation is a thread and a response a checkpoint of one, so every Responses and
 * Conversations call passes the thread rule (src/auth/policy.ts): a key reaches thread t iff a
 * grant matches session:t (403 BEM-025), and removing or branching stored history also needs
 * rewrite_thread, which members never hold (403 BEM-022). Every denial changes nothing.
 */
const tenant = tenantForRuns();
let memberNone: string; // no grants
let memberA: string; // session:a-*
let memberAll: string; // session:*
let onB: { thread: string; response: string; item: string };
let onA: { thread: string; first: string; item: string };

type Code = { error: { code: string } };
const code = async (r: Response) => ((await r.json()) as Code).error.code;

async function made<T>(res: Promise<Response>): Promise<T> {
  const r = await res;
  if (r.status !== 200) throw new Error(`setup failed: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}
const respond = (key: string, body: Record<string, unknown>) => api("/v1/responses", { key, body: { model: "offline-echo", ...body } });
const itemOf = async (thread: string) =>
  (await made<{ data: { id: string }[] }>(api(`/v1/conversations/${thread}/items?order=asc`, { key: tenant().adminKey }))).data[0]!.id;

/** The tenant's stored responses, conversations and thread list, and the named threads' state and history (read by the admin). */
async function world(...threads: string[]): Promise<string> {
  const t = tenant().tenant;
  await settleBookkeeping(t);
  const rows = await Promise.all(
    ["responses", "conversations", "threads"].map(
      async (table) => (await env.DB.prepare(`SELECT * FROM ${table} WHERE tenant_id = ? ORDER BY rowid`).bind(t).all()).results,
    ),
  );
  const heads = await Promise.all(threads.map((id) => snapshot(tenant().adminKey, id)));
  return JSON.stringify({ rows, heads });
}

/** The official client's error for a refused call. */
async function refused(call: Promise<unknown>): Promise<{ status: number; code: string }> {
  try {
    await call;
  } catch (e) {
    if (e instanceof OpenAI.APIError)
      return { status: e.status ?? 0, code: (e.error as { code?: string } | undefined)?.code ?? (e as { code?: string }).code ?? "" };
    throw e;
  }
  throw new Error("the call was allowed");
}

beforeAll(async () => {
  const t = tenant();
  memberNone = t.memberKey;
  memberA = (await createKey(t.tenant, { role: "member", scopes: ["session:a-*"] })).key;
  memberAll = (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key;
  const b = await made<{ id: string }>(respond(t.adminKey, { input: "secret plan", conversation: await newThread("b-1") }));
  onB = { thread: "b-1", response: b.id, item: await itemOf("b-1") };
  const a = await made<{ id: string }>(respond(t.adminKey, { input: "first", conversation: await newThread("a-1") }));
  await made(respond(t.adminKey, { input: "second", previous_response_id: a.id }));
  onA = { thread: "a-1", first: a.id, item: await itemOf("a-1") };
});

async function newThread(id: string): Promise<string> {
  await made(
    api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "offline-echo", thread_id: id, messages: [{ role: "user", content: `open ${id}` }] },
    }),
  );
  return id;
}

describe("Responses: every thread a call touches is checked against the key's grants", () => {
  it("previous_response_id on a thread outside the grants: 403 BEM-025 through the openai client, nothing run or saved", async () => {
    const fake = fakeOpenAI().reply("never");
    const before = await world("b-1");
    const e = await refused(openaiClient(memberA).responses.create({ model: "gpt-4o-mini", input: "go on", previous_response_id: onB.response }));
    expect(e).toEqual({ status: 403, code: "BEM-025" });
    // store:false would read b-1's history: refused too.
    expect(await code(await respond(memberA, { input: "peek", previous_response_id: onB.response, store: false }))).toBe("BEM-025");
    expect(fake.calls).toHaveLength(0);
    expect(await world("b-1")).toBe(before);
  });

  it("conversation outside the grants: 403 BEM-025 whether or not it exists; nothing saved", async () => {
    const before = await world("b-1");
    const e = await refused(openaiClient(memberA).responses.create({ model: "offline-echo", input: "hi", conversation: "b-1" }));
    expect(e).toEqual({ status: 403, code: "BEM-025" });
    const missing = await respond(memberA, { input: "hi", conversation: "b-missing" });
    expect(missing.status).toBe(403);
    expect(await code(missing)).toBe("BEM-025");
    expect(await world("b-1")).toBe(before);
  });

  it("retrieve, input_items and delete of a response on a thread outside the grants: 403 BEM-025, the record stays", async () => {
    const client = openaiClient(memberA);
    const before = await world("b-1");
    expect(await refused(client.responses.retrieve(onB.response))).toEqual({ status: 403, code: "BEM-025" });
    expect(await refused(client.responses.inputItems.list(onB.response))).toEqual({ status: 403, code: "BEM-025" });
    // Deleting needs rewrite_thread (below), which a member never holds: refused before the thread is looked at.
    expect(await refused(client.responses.delete(onB.response))).toEqual({ status: 403, code: "BEM-022" });
    expect(await world("b-1")).toBe(before);
    // The admin still reads it.
    expect((await openaiClient(tenant().adminKey).responses.retrieve(onB.response)).id).toBe(onB.response);
  });

  it("a key that reaches the thread reads and chains at the head; an older previous_response_id (a branch) needs rewrite_thread", async () => {
    const client = openaiClient(memberA);
    expect((await client.responses.retrieve(onA.first)).id).toBe(onA.first);
    const before = await world("a-1");
    // onA.first is no longer a-1's head: continuing from it is a branch, which /fork refuses a member too.
    const e = await refused(client.responses.create({ model: "offline-echo", input: "branch", previous_response_id: onA.first }));
    expect(e).toEqual({ status: 403, code: "BEM-022" });
    expect(await world("a-1")).toBe(before);
    // Without saving, nothing is rewritten: allowed.
    const peek = await client.responses.create({ model: "offline-echo", input: "what if", previous_response_id: onA.first, store: false });
    expect(peek.status).toBe("completed");
    expect(await world("a-1")).toBe(before);
    // At the head: a plain continuation.
    const head = await client.responses.create({ model: "offline-echo", input: "third", conversation: "a-1" });
    const next = await client.responses.create({ model: "offline-echo", input: "fourth", previous_response_id: head.id });
    expect((next as unknown as { edgeweave: { thread_id: string } }).edgeweave.thread_id).toBe("a-1");
    // The admin may branch from the old one.
    const branched = await openaiClient(tenant().adminKey).responses.create({ model: "offline-echo", input: "branch", previous_response_id: onA.first });
    expect(branched.status).toBe("completed");
  });

  it("deleting a stored response needs rewrite_thread, as deleting a conversation item does: a member that reaches the thread may not (403 BEM-022, the record stays); the admin may", async () => {
    const t = tenant();
    const theirs = await made<{ id: string }>(respond(t.adminKey, { input: "admin's answer", conversation: "a-1" }));
    const own = await made<{ id: string }>(respond(memberA, { input: "member's own", conversation: "a-1" }));
    const client = openaiClient(memberA);
    for (const id of [theirs.id, own.id]) {
      expect(await refused(client.responses.delete(id))).toEqual({ status: 403, code: "BEM-022" });
      expect((await client.responses.retrieve(id)).id).toBe(id);
    }
    const admin = openaiClient(t.adminKey);
    for (const id of [theirs.id, own.id]) {
      expect(await admin.responses.delete(id)).toMatchObject({ id, deleted: true });
      expect(await refused(admin.responses.retrieve(id))).toEqual({ status: 404, code: "BEM-100" });
    }
  });

  it("a new thread (no conversation, no previous response) needs a grant for it, as chat on a new thread_id; store:false needs none", async () => {
    const before = await world();
    const e = await refused(openaiClient(memberNone).responses.create({ model: "offline-echo", input: "hello" }));
    expect(e).toEqual({ status: 403, code: "BEM-025" });
    expect(await world()).toBe(before);
    const stateless = await openaiClient(memberNone).responses.create({ model: "offline-echo", input: "hello", store: false });
    expect(stateless.status).toBe("completed");
    expect(await world()).toBe(before);
    const stored = await openaiClient(memberAll).responses.create({ model: "offline-echo", input: "hello" });
    expect((await openaiClient(memberAll).responses.retrieve(stored.id)).id).toBe(stored.id);
  });
});

describe("Conversations: a conversation is a thread", () => {
  it("every read and write of a conversation outside the grants is 403 BEM-025 through the openai client; nothing changed", async () => {
    const client = openaiClient(memberA);
    const before = await world("b-1");
    const denied = [
      () => client.conversations.retrieve("b-1"),
      () => client.conversations.update("b-1", { metadata: { k: "v" } }),
      () => client.conversations.items.list("b-1"),
      () => client.conversations.items.create("b-1", { items: [{ type: "message", role: "user", content: "injected" }] }),
      () => client.conversations.items.retrieve(onB.item, { conversation_id: "b-1" }),
    ];
    for (const call of denied) expect(await refused(call())).toEqual({ status: 403, code: "BEM-025" });
    // Deleting needs rewrite_thread, which a member never holds: refused by the route before the thread is looked at.
    expect(await refused(client.conversations.delete("b-1"))).toEqual({ status: 403, code: "BEM-022" });
    expect(await refused(client.conversations.items.delete(onB.item, { conversation_id: "b-1" }))).toEqual({ status: 403, code: "BEM-022" });
    expect(await world("b-1")).toBe(before);
  });

  it("a member that reaches the conversation reads it and adds items, but deleting it or an item needs rewrite_thread (403 BEM-022)", async () => {
    const client = openaiClient(memberA);
    expect((await client.conversations.retrieve("a-1")).id).toBe("a-1");
    expect((await client.conversations.items.retrieve(onA.item, { conversation_id: "a-1" })).id).toBe(onA.item);
    const before = await world("a-1");
    expect(await refused(client.conversations.items.delete(onA.item, { conversation_id: "a-1" }))).toEqual({ status: 403, code: "BEM-022" });
    expect(await refused(client.conversations.delete("a-1"))).toEqual({ status: 403, code: "BEM-022" });
    expect(await world("a-1")).toBe(before);
    await client.conversations.items.create("a-1", { items: [{ type: "message", role: "user", content: "appended" }] });
    expect((await client.conversations.items.list("a-1")).data.length).toBeGreaterThan(0);
  });

  it("creating a conversation (a new thread conv_…) needs a grant matching it: 403 BEM-025 and nothing stored without one", async () => {
    const before = await world();
    expect(await refused(openaiClient(memberNone).conversations.create({ items: [{ type: "message", role: "user", content: "x" }] }))).toEqual({
      status: 403,
      code: "BEM-025",
    });
    expect(await world()).toBe(before);
    const conv = await openaiClient(memberAll).conversations.create({ metadata: { by: "member" } });
    expect(conv.id).toMatch(/^conv_/);
  });
});

describe("Chat's resent-history reconciliation reads and resets a thread only after the thread check", () => {
  const q = (content: string) => ({ role: "user", content });
  const r = (content: string) => ({ role: "assistant", content });
  /** A thread written by the admin: each list is one checkpoint. */
  async function seeded(id: string, ...checkpoints: { role: string; content: string }[][]): Promise<string> {
    for (const messages of checkpoints) await made(api(`/v1/threads/${id}/state`, { key: tenant().adminKey, body: { ops: [{ op: "append", messages }] } }));
    return id;
  }
  const resend = (key: string, thread: string, messages: unknown[]) =>
    api("/v1/chat/completions", { key, body: { model: "offline-echo", thread_id: thread, messages } });

  it("a resend on a thread outside the grants is 403 BEM-025 and leaves it as it was (no reset, no BEM-109 probe)", async () => {
    const thread = await seeded("b-reset", [q("q1"), r("r1"), q("q2"), r("r2")]);
    const before = await world(thread);
    // Diverges inside the thread's first checkpoint: reconciliation would empty the head.
    const edited = await resend(memberA, thread, [q("q1"), r("r1"), q("edited")]);
    expect(edited.status).toBe(403);
    expect(await code(edited)).toBe("BEM-025");
    // The stored messages again (BEM-109 for a key that reaches it: it would tell what the thread holds).
    expect(await code(await resend(memberA, thread, [q("q1"), r("r1"), q("q2"), r("r2")]))).toBe("BEM-025");
    expect(await world(thread)).toBe(before);
  });

  it("an edited resend on a reached thread rewrites its head, so it needs rewrite_thread: a member gets 403 BEM-022 and nothing changes", async () => {
    const reset = await seeded("a-reset", [q("q1"), r("r1"), q("q2"), r("r2")]);
    const branch = await seeded("a-branch", [q("q1"), r("r1")], [q("q2"), r("r2")]);
    const before = await world(reset, branch);
    for (const thread of [reset, branch]) {
      const res = await resend(memberA, thread, [q("q1"), r("r1"), q("edited")]);
      expect(res.status).toBe(403);
      expect(await code(res)).toBe("BEM-022");
    }
    expect(await world(reset, branch)).toBe(before);
    // The admin's edit branches (reset) as before.
    const admin = await resend(tenant().adminKey, reset, [q("q1"), r("r1"), q("edited")]);
    expect(admin.status).toBe(200);
  });
});

describe("Idempotency-Key is declared by the route and bound to the calling key", () => {
  it("another key of the tenant reusing a key with the same body makes its own request (here refused by its grants), never a replay of the first key's result", async () => {
    const k = `idem-${crypto.randomUUID()}`;
    const body = { model: "offline-echo", input: "once", conversation: "a-1" };
    const first = await api("/v1/responses", { key: memberA, body, headers: { "idempotency-key": k } });
    expect(first.status).toBe(200);
    const replay = await api("/v1/responses", { key: memberA, body, headers: { "idempotency-key": k } });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    // Records are per API key: the other key's request is its own, judged by its own grants.
    const other = await api("/v1/responses", { key: memberNone, body, headers: { "idempotency-key": k } });
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect(other.status).toBe(403);
    expect(await code(other)).toBe("BEM-025");
  });
});
