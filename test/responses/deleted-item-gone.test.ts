import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { openaiClient, tenantForRuns } from "../support/runs";

// Issue 36: DELETE /v1/conversations/{id}/items/{item} wrote a checkpoint without the message, but the
// thread's history and its older checkpoints' state still showed the text to every key reaching the thread.

const tenant = tenantForRuns();

describe("a deleted conversation item is gone from the thread's history too", () => {
  it("history and every older checkpoint's state no longer hold its text; the checkpoints stay", async () => {
    const client = openaiClient(tenant().adminKey);
    const conv = await client.conversations.create({
      items: [
        { type: "message", role: "user", content: "My card is DELETE-ME-4111." },
        { type: "message", role: "assistant", content: "Noted." },
      ],
    });
    await client.conversations.items.create(conv.id, { items: [{ type: "message", role: "user", content: "And my city is Lisbon." }] });
    const items = await client.conversations.items.list(conv.id, { order: "asc" });
    const secret = items.data[0]!;
    const key = tenant().adminKey;
    const history = async () => (await (await api(`/v1/threads/${conv.id}/history`, { key })).json()) as { checkpoints: { id: string }[] };
    const before = await history();
    expect(JSON.stringify(before)).toContain("DELETE-ME-4111");

    await client.conversations.items.delete(secret.id!, { conversation_id: conv.id });
    const after = await history();
    expect(after.checkpoints.map((c) => c.id)).toEqual(expect.arrayContaining(before.checkpoints.map((c) => c.id)));
    expect(JSON.stringify(after)).not.toContain("DELETE-ME-4111");
    for (const cp of before.checkpoints) {
      const res = await api(`/v1/threads/${conv.id}/state?checkpoint_id=${cp.id}`, { key });
      expect(res.status).toBe(200);
      const state = (await res.json()) as { channels: { messages: { id: string; content: unknown }[] } };
      expect(JSON.stringify(state)).not.toContain("DELETE-ME-4111");
      // The older states keep their shape and the rest of the conversation: the deleted message, blanked, where it was.
      expect(state.channels.messages[0]).toMatchObject({ content: "" });
      expect(state.channels.messages[1]).toMatchObject({ content: "Noted." });
    }
    const latest = await (await api(`/v1/threads/${conv.id}/state`, { key })).text();
    expect(latest).toContain("Lisbon");
    expect(latest).not.toContain("DELETE-ME-4111");
  });

  it("a stored response no longer serves a deleted item's text among its input items or output", async () => {
    fakeOpenAI().reply("Your code RESP-ANSWER-88 is safe.");
    const client = openaiClient(tenant().adminKey);
    const conv = await client.conversations.create({});
    const r = await client.responses.create({ model: "gpt-4o-mini", input: "My code is RESP-SECRET-77.", conversation: conv.id });
    const key = tenant().adminKey;
    const served = async () =>
      (await (await api(`/v1/responses/${r.id}/input_items`, { key })).text()) + (await (await api(`/v1/responses/${r.id}`, { key })).text());
    expect(await served()).toContain("RESP-SECRET-77");
    expect(await served()).toContain("RESP-ANSWER-88");
    const items = await client.conversations.items.list(conv.id, { order: "asc" });
    for (const item of items.data) await client.conversations.items.delete(item.id!, { conversation_id: conv.id });
    const after = await served();
    expect(after).not.toContain("RESP-SECRET-77");
    expect(after).not.toContain("RESP-ANSWER-88");
  });
});
