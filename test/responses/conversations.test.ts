import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant } from "../support/tenants";
import { openaiClient, tenantForRuns, wireMessages, wireText } from "../support/runs";

const tenant = tenantForRuns();

const textOf = (i: { type: string; content?: { type: string; text?: string }[]; output?: unknown }) =>
  i.type === "message" ? (i.content?.map((p) => p.text ?? "").join("") ?? "") : i.type;

describe("/v1/conversations over threads, with the official openai client", () => {
  it("conversations.create with items + responses on it: the thread is the conversation", async () => {
    const fake = fakeOpenAI().reply("Nice to meet you, Ada.").reply("You are Ada.");
    const client = openaiClient(tenant().adminKey);
    const conv = await client.conversations.create({
      items: [
        { type: "message", role: "user", content: "I am Ada." },
        { type: "message", role: "assistant", content: "Hello!" },
      ],
      metadata: { topic: "intro" },
    });
    expect(conv.object).toBe("conversation");
    expect(conv.metadata).toEqual({ topic: "intro" });
    const r1 = await client.responses.create({ model: "gpt-4o-mini", input: "Remember me?", conversation: conv.id });
    expect(r1.conversation).toEqual({ id: conv.id });
    await client.responses.create({ model: "gpt-4o-mini", input: "Who am I?", conversation: { id: conv.id } });
    expect(wireMessages(fake.calls[0]!.body).map(wireText)).toEqual(["I am Ada.", "Hello!", "Remember me?"]);
    expect(wireMessages(fake.calls[1]!.body).map(wireText)).toEqual(["I am Ada.", "Hello!", "Remember me?", "Nice to meet you, Ada.", "Who am I?"]);
    // The same thing seen as a thread.
    const state = (await (await api(`/v1/threads/${conv.id}/state`, { key: tenant().adminKey })).json()) as { channels: { messages: unknown[] } };
    expect(state.channels.messages).toHaveLength(6);
    const items = await client.conversations.items.list(conv.id, { order: "asc" });
    expect(items.data.map((i) => textOf(i as never))).toEqual(["I am Ada.", "Hello!", "Remember me?", "Nice to meet you, Ada.", "Who am I?", "You are Ada."]);
  });

  it("retrieves, updates metadata, adds, reads and deletes items, deletes the conversation", async () => {
    const client = openaiClient(tenant().adminKey);
    const conv = await client.conversations.create({});
    expect((await client.conversations.retrieve(conv.id)).metadata).toEqual({});
    const updated = await client.conversations.update(conv.id, { metadata: { a: "1" } });
    expect(updated.metadata).toEqual({ a: "1" });
    expect((await client.conversations.retrieve(conv.id)).metadata).toEqual({ a: "1" });
    const added = await client.conversations.items.create(conv.id, {
      items: [
        { type: "message", role: "user", content: "one" },
        { type: "message", role: "user", content: "two" },
      ],
    });
    expect(added.data.map((i) => textOf(i as never))).toEqual(["one", "two"]);
    const first = added.data[0]!;
    const got = await client.conversations.items.retrieve(first.id!, { conversation_id: conv.id });
    expect(textOf(got as never)).toBe("one");
    await client.conversations.items.delete(first.id!, { conversation_id: conv.id });
    const left = await client.conversations.items.list(conv.id);
    expect(left.data.map((i) => textOf(i as never))).toEqual(["two"]);
    await expect(client.conversations.items.retrieve(first.id!, { conversation_id: conv.id })).rejects.toMatchObject({ status: 404 });
    const del = await client.conversations.delete(conv.id);
    expect(del.deleted).toBe(true);
    await expect(client.conversations.retrieve(conv.id)).rejects.toMatchObject({ status: 404 });
  });

  it("items pages follow `after`; an `after` the list does not hold is 400 BEM-011, not the first page again", async () => {
    const client = openaiClient(tenant().adminKey);
    const conv = await client.conversations.create({
      items: ["one", "two", "three"].map((text) => ({ type: "message" as const, role: "user" as const, content: text })),
    });
    const first = await client.conversations.items.list(conv.id, { order: "asc", limit: 2 });
    expect(first.data.map((i) => textOf(i as never))).toEqual(["one", "two"]);
    const next = await client.conversations.items.list(conv.id, { order: "asc", limit: 2, after: first.data[1]!.id! });
    expect(next.data.map((i) => textOf(i as never))).toEqual(["three"]);
    // Read as "from the start", a stale cursor (its item deleted meanwhile) made an auto-paging client loop.
    const stale = await api(`/v1/conversations/${conv.id}/items?after=msg_gone`, { key: tenant().adminKey });
    expect(stale.status).toBe(400);
    expect(((await stale.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "BEM-011",
      message: expect.stringContaining("after"),
    });
    const r = await client.responses.create({ model: "offline-echo", input: [{ role: "user", content: "hi" }], conversation: conv.id });
    const res = await api(`/v1/responses/${r.id}/input_items?after=in_gone`, { key: tenant().adminKey });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-011");
  });

  it("a chat thread is a conversation too", async () => {
    fakeOpenAI().reply("hi there");
    const thread = `th-${crypto.randomUUID().slice(0, 8)}`;
    await api("/v1/chat/completions", {
      key: tenant().adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "hello" }] },
    });
    const client = openaiClient(tenant().adminKey);
    expect((await client.conversations.retrieve(thread)).id).toBe(thread);
    const items = await client.conversations.items.list(thread, { order: "asc" });
    expect(items.data.map((i) => textOf(i as never))).toEqual(["hello", "hi there"]);
  });

  it("another tenant's conversation is 404 BEM-102 everywhere, responses included", async () => {
    const conv = await openaiClient(tenant().adminKey).conversations.create({ items: [{ type: "message", role: "user", content: "private words" }] });
    const other = await createTenant();
    for (const res of [
      await api(`/v1/conversations/${conv.id}`, { key: other.adminKey }),
      await api(`/v1/conversations/${conv.id}/items`, { key: other.adminKey }),
      await api(`/v1/conversations/${conv.id}`, { key: other.adminKey, body: { metadata: { x: "y" } } }),
      await api(`/v1/conversations/${conv.id}`, { key: other.adminKey, method: "DELETE" }),
      await api("/v1/responses", { key: other.adminKey, body: { model: "gpt-4o-mini", input: "x", conversation: conv.id } }),
    ]) {
      expect(res.status).toBe(404);
      const text = await res.text();
      expect(JSON.parse(text).error.code).toBe("BEM-102");
      expect(text).not.toContain("private");
    }
  });

  it("a conversation that does not exist is 404 BEM-102 on a stored response, and no thread is made for it", async () => {
    const t = tenant();
    const res = await api("/v1/responses", { key: t.adminKey, body: { model: "gpt-4o-mini", input: "x", conversation: "conv_never_created" } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-102");
    expect((await api("/v1/threads/conv_never_created/state", { key: t.adminKey })).status).toBe(404);
  });

  it("Responses input on a conversation that resends the history stores only the new part (reconciled)", async () => {
    const fake = fakeOpenAI().reply("A1").reply("A2");
    const client = openaiClient(tenant().adminKey);
    const conv = await client.conversations.create({});
    await client.responses.create({ model: "gpt-4o-mini", input: "Q1", conversation: conv.id });
    const r = await client.responses.create({
      model: "gpt-4o-mini",
      conversation: conv.id,
      input: [
        { role: "user", content: "Q1" },
        { role: "assistant", content: "A1" },
        { role: "user", content: "Q2" },
      ],
    });
    expect((r as unknown as { edgeweave: { reconciled: unknown } }).edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: null });
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1", "Q2"]);
    const items = await client.conversations.items.list(conv.id, { order: "asc" });
    expect(items.data.map((i) => textOf(i as never))).toEqual(["Q1", "A1", "Q2", "A2"]);
  });
});
