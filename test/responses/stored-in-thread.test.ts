import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createKey } from "../support/tenants";
import { openaiClient, tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";

/**
 * A stored response lives in its thread's object and its id names the thread
 * (src/responses/ids.ts): continuing or reading it makes no D1 lookup. Responses stored in D1
 * before ids named threads keep working.
 */
const tenant = tenantForRuns();
type Extended = { id: string; edgeweave: { thread_id: string; checkpoint_id: string } };
type Coded = { error: { code: string } };

const d1Responses = async (t: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM responses WHERE tenant_id = ?").bind(t).first<{ n: number }>())?.n ?? 0;
const hex = () => crypto.randomUUID().replaceAll("-", "");

describe("stored responses live in their thread's object", () => {
  it("a response's id names its thread; retrieve, input items, chaining and delete read no D1 record", async () => {
    const fake = fakeOpenAI().reply("Hello Eve!").reply("You are Eve.");
    const { adminKey: key, tenant: t } = tenant();
    const client = openaiClient(key);
    const first = (await client.responses.create({ model: "gpt-4o-mini", input: "Hi, I am Eve." })) as unknown as Extended;
    expect(first.id).toMatch(/^resp_[0-9a-f]{32}_thr_[0-9a-f]{32}$/);
    expect(first.id.endsWith(`_${first.edgeweave.thread_id}`)).toBe(true);
    expect(await d1Responses(t)).toBe(0);

    const second = await client.responses.create({ model: "gpt-4o-mini", input: "Who am I?", previous_response_id: first.id });
    expect(wireMessages(fake.calls[1]!.body).map((m) => `${m.role}:${wireText(m)}`)).toEqual(["user:Hi, I am Eve.", "assistant:Hello Eve!", "user:Who am I?"]);
    expect((await client.responses.retrieve(first.id)).output_text).toBe("Hello Eve!");
    expect((await client.responses.inputItems.list(second.id)).data).toHaveLength(1);
    await client.responses.delete(first.id);
    expect((await api(`/v1/responses/${first.id}`, { key })).status).toBe(404);
    // The thread and the other response are untouched.
    expect((await client.responses.retrieve(second.id)).output_text).toBe("You are Eve.");
    expect(await d1Responses(t)).toBe(0);
  });

  it("an id naming a thread without that response is 404 BEM-100; a thread outside the key's grants is 403 BEM-025 before anything is read", async () => {
    fakeOpenAI().reply("kept");
    const { adminKey, tenant: t } = tenant();
    const made = (await openaiClient(adminKey).responses.create({ model: "gpt-4o-mini", input: "x" })) as unknown as Extended;
    const forged = `resp_${hex()}_${made.edgeweave.thread_id}`;
    for (const res of [
      await api(`/v1/responses/${forged}`, { key: adminKey }),
      await api(`/v1/responses/${forged}`, { key: adminKey, method: "DELETE" }),
      await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: "y", previous_response_id: forged } }),
      await api(`/v1/responses/resp_${hex()}_..`, { key: adminKey }),
    ]) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as Coded).error.code).toBe("BEM-100");
    }
    const member = (await createKey(t, { role: "member", scopes: ["session:m-*"] })).key;
    for (const res of [
      await api(`/v1/responses/${made.id}`, { key: member }),
      await api("/v1/responses", { key: member, body: { model: "gpt-4o-mini", input: "y", previous_response_id: made.id } }),
    ]) {
      expect(res.status).toBe(403);
      expect(((await res.json()) as Coded).error.code).toBe("BEM-025");
    }
    // Nothing was added to the thread by the refused or missing continuations.
    const state = (await (await api(`/v1/threads/${made.edgeweave.thread_id}/state`, { key: adminKey })).json()) as { channels: { messages: unknown[] } };
    expect(state.channels.messages).toHaveLength(2);
  });

  it("item_reference: a stored output item (message or function call) stands in for itself; an unknown one is 404 BEM-110, one outside the grants 403 BEM-025", async () => {
    const fake = fakeOpenAI()
      .reply({ text: "Checking.", tool_calls: [{ id: "call_w1", name: "weather", arguments: { city: "Oslo" } }] })
      .reply("Cold in Oslo.")
      .reply("Still cold.");
    const { adminKey, tenant: t } = tenant();
    const tools = [{ type: "function", name: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } }];
    const first = (await (
      await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: "Weather in Oslo?", tools } })
    ).json()) as Extended & {
      output: { id: string; type: string }[];
    };
    const [msg, call] = [first.output.find((o) => o.type === "message")!, first.output.find((o) => o.type === "function_call")!];
    expect(msg.id).toMatch(new RegExp(`^msg_[0-9a-f]{32}_${first.edgeweave.thread_id}$`));
    const input = [
      { role: "user", content: "Weather in Oslo?" },
      { type: "item_reference", id: msg.id },
      { type: "item_reference", id: call.id },
      { type: "function_call_output", call_id: "call_w1", output: "-5C" },
    ];
    const res = await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input, tools } });
    expect(res.status).toBe(200);
    const wire = wireMessages(fake.calls[1]!.body) as { role: string; content: unknown; tool_calls?: { id: string }[]; tool_call_id?: string }[];
    expect(wire.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(wire[1]!.content).toBe("Checking.");
    expect(wire[1]!.tool_calls?.map((c) => c.id)).toEqual(["call_w1"]);
    expect(wire[2]!.tool_call_id).toBe("call_w1");

    const unknown = await api("/v1/responses", {
      key: adminKey,
      body: { model: "gpt-4o-mini", input: [{ type: "item_reference", id: `msg_${hex()}_${first.edgeweave.thread_id}` }] },
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Coded).error.code).toBe("BEM-110");
    const malformed = await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: [{ type: "item_reference", id: "msg_1" }] } });
    expect(((await malformed.json()) as Coded).error.code).toBe("BEM-110");
    const member = (await createKey(t, { role: "member", scopes: ["session:thr_*"] })).key;
    const outside = await api("/v1/responses", { key: member, body: { model: "gpt-4o-mini", store: false, input: [{ type: "item_reference", id: msg.id }] } });
    expect(outside.status).toBe(200); // thr_* reaches the first response's thread
    const none = (await createKey(t, { role: "member", scopes: [] })).key;
    const refused = await api("/v1/responses", { key: none, body: { model: "gpt-4o-mini", store: false, input: [{ type: "item_reference", id: msg.id }] } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Coded).error.code).toBe("BEM-025");
    expect(fake.calls).toHaveLength(3);
  });

  it("a response stored in D1 before ids named threads still retrieves, chains and deletes", async () => {
    const fake = fakeOpenAI().reply("Earlier answer").reply("Later answer");
    const { adminKey: key, tenant: t } = tenant();
    const thread = uniqueThread("legacy");
    const chat = (await (
      await api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "Earlier question" }] } })
    ).json()) as { edgeweave: { checkpoint_id: string } };
    const id = `resp_${hex()}`;
    const body = { id, object: "response", status: "completed", model: "gpt-4o-mini", output: [] };
    await env.DB.prepare("INSERT INTO responses (tenant_id, id, thread_id, checkpoint_id, body, input, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(t, id, thread, chat.edgeweave.checkpoint_id, JSON.stringify(body), "[]", 1)
      .run();
    expect(((await (await api(`/v1/responses/${id}`, { key })).json()) as { id: string }).id).toBe(id);
    const next = (await openaiClient(key).responses.create({ model: "gpt-4o-mini", input: "Later question", previous_response_id: id })) as unknown as Extended;
    expect(next.edgeweave.thread_id).toBe(thread);
    expect(next.id.endsWith(`_${thread}`)).toBe(true);
    expect(wireMessages(fake.calls[1]!.body).map(wireText)).toEqual(["Earlier question", "Earlier answer", "Later question"]);
    expect((await api(`/v1/responses/${id}`, { key, method: "DELETE" })).status).toBe(200);
    expect((await api(`/v1/responses/${id}`, { key })).status).toBe(404);
    expect(await d1Responses(t)).toBe(0);
  });
});
