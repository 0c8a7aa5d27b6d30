import { describe, expect, it } from "vitest";
import { fakeOpenAI, slowCompletion } from "../support/fake-openai";
import { api, createTenant } from "../support/tenants";
import { messageCount as countMessages, openaiClient, tenantForRuns, uniqueThread } from "../support/runs";

const tenant = tenantForRuns();
const key = () => `idem-${crypto.randomUUID()}`;
const post = (path: string, body: unknown, idem: string, k = tenant().adminKey) => api(path, { key: k, body, headers: { "idempotency-key": idem } });
const chatBody = (thread: string, text = "hello") => ({ model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: text }] });

const messageCount = (thread: string) => countMessages(tenant().adminKey, thread);

describe("Idempotency-Key", () => {
  it("the same key and body twice: one upstream call, one turn, the identical body (replayed)", async () => {
    const fake = fakeOpenAI().reply("only once");
    const thread = uniqueThread();
    const k = key();
    const first = await post("/v1/chat/completions", chatBody(thread), k);
    const second = await post("/v1/chat/completions", chatBody(thread), k);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await second.text()).toBe(await first.text());
    expect(fake.calls).toHaveLength(1);
    expect(await messageCount(thread)).toBe(2);
  });

  it("the official client's retries with one key run the turn once", async () => {
    const fake = fakeOpenAI().reply("one reply");
    const thread = uniqueThread();
    const client = openaiClient(tenant().adminKey);
    const k = key();
    const a = await client.chat.completions.create(
      { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      { headers: { "Idempotency-Key": k, "X-Thread-Id": thread } },
    );
    const b = await client.chat.completions.create(
      { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      { headers: { "Idempotency-Key": k, "X-Thread-Id": thread } },
    );
    expect(b.id).toBe(a.id);
    expect(fake.calls).toHaveLength(1);
  });

  it("the same key with a different body is 422 BEM-106 and runs nothing", async () => {
    const fake = fakeOpenAI().reply("first");
    const thread = uniqueThread();
    const k = key();
    expect((await post("/v1/chat/completions", chatBody(thread, "a"), k)).status).toBe(200);
    const other = await post("/v1/chat/completions", chatBody(thread, "b"), k);
    expect(other.status).toBe(422);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("BEM-106");
    // Another route with the same key is a different request too.
    const elsewhere = await post("/v1/responses", { model: "gpt-4o-mini", input: "a" }, k);
    expect(elsewhere.status).toBe(422);
    expect(fake.calls).toHaveLength(1);
    expect(await messageCount(thread)).toBe(2);
  });

  it("concurrent duplicates: the second waits for the first; one turn", async () => {
    const fake = fakeOpenAI().respond(slowCompletion(300));
    const thread = uniqueThread();
    const k = key();
    const [a, b] = await Promise.all([post("/v1/chat/completions", chatBody(thread), k), post("/v1/chat/completions", chatBody(thread), k)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await a.text()).toBe(await b.text());
    expect(fake.calls).toHaveLength(1);
    expect(await messageCount(thread)).toBe(2);
  });

  it("a streamed response is recorded whole and replayed", async () => {
    const fake = fakeOpenAI().reply("streamed once");
    const k = key();
    const body = { model: "gpt-4o-mini", input: "stream", stream: true };
    const first = await (await post("/v1/responses", body, k)).text();
    expect(first).toContain("response.completed");
    let second = "";
    for (let i = 0; i < 20 && !second.includes("response.completed"); i++) {
      const res = await post("/v1/responses", body, k);
      second = await res.text();
    }
    expect(second).toBe(first);
    expect(fake.calls).toHaveLength(1);
  });

  it("a failed run releases the key: the retry runs", async () => {
    const fake = fakeOpenAI().status(401).reply("recovered"); // a 4xx upstream: no failover, one call
    const thread = uniqueThread();
    const k = key();
    const failed = await post("/v1/chat/completions", chatBody(thread), k);
    expect(failed.status).toBe(424); // a configuration error: the operator's fix changes it, so the key is not kept
    expect(fake.calls).toHaveLength(1);
    const retry = await post("/v1/chat/completions", chatBody(thread), k);
    expect(retry.status).toBe(200);
    expect(fake.calls).toHaveLength(2);
  });

  it("keys are per tenant; memory writes are idempotent too", async () => {
    const other = await createTenant();
    const k = key();
    const fact = { scope: "organization:acme", kind: "style", text: "Be brief." };
    const a = await post("/v1/memory/facts", fact, k);
    const b = await post("/v1/memory/facts", fact, k);
    const c = await post("/v1/memory/facts", fact, k, other.adminKey);
    expect(a.status).toBe(201);
    const [ja, jb, jc] = (await Promise.all([a.json(), b.json(), c.json()])) as { id: string }[];
    expect(jb!.id).toBe(ja!.id);
    expect(jc!.id).not.toBe(ja!.id);
  });

  it("an invalid key is 400 BEM-108", async () => {
    const res = await post("/v1/chat/completions", chatBody(uniqueThread()), "has space");
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-108");
  });
});
