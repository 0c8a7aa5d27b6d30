import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { snapshot, tenantForRuns, uniqueThread, wireMessages, wireText } from "../../support/runs";
import { OTHER, planted } from "../../support/by-meaning";
import { fakeOpenAI } from "../../support/fake-openai";
import { api, createKey, createTenant } from "../../support/tenants";
import { deliver, deliveryRow, registerHook, waitFor } from "../../webhooks/helpers";

const tenant = tenantForRuns({ memberScopes: ["docset:*", "session:*"] });
type Msg = { role: string; content: string | null; tool_call_id?: string; metadata?: Record<string, unknown> };
type State = { channels: { messages: Msg[] } };
// A member without the agent's organization:acme grant narrows the run to its session (memory_scopes);
// naming the agent's layers it cannot read would be 403 BEM-023 before any tool runs.
const chat = (key: string, thread: string, content: string, memory_scopes?: string[]) =>
  api("/v1/chat/completions", {
    key,
    body: {
      model: "gpt-4o-mini",
      agent: "memory-assistant",
      thread_id: thread,
      messages: [{ role: "user", content }],
      ...(memory_scopes ? { memory_scopes } : {}),
    },
  });
const toolMessages = async (key: string, thread: string) => ((await snapshot(key, thread)).state as State).channels.messages.filter((m) => m.role === "tool");
const factsIn = async (tenantId: string, scope: string) =>
  (
    await env.DB.prepare("SELECT id, kind, key, text, version FROM facts WHERE tenant_id = ? AND scope = ? ORDER BY created_at")
      .bind(tenantId, scope)
      .all<{ id: string; kind: string; key: string | null; text: string; version: number }>()
  ).results;
const call = (name: string, args: Record<string, unknown>, id = `call_${name}`) => ({ tool_calls: [{ id, name, arguments: args }] });

describe("memory tools through a full run", () => {
  it("remember (keyed upsert), recall and forget act with the admin key's grants and are recorded as tool steps", async () => {
    const t = tenant();
    const thread = uniqueThread();
    const fake = fakeOpenAI()
      .reply(call("remember", { kind: "profile", key: "home-city", text: "The user lives in Lisbon." }))
      .reply("Noted.")
      .reply(call("remember", { kind: "profile", key: "home-city", text: "The user moved to Berlin." }))
      .reply(call("recall", { query: "where does the user live?" }))
      .reply("You live in Berlin.");
    expect((await chat(t.adminKey, thread, "I live in Lisbon.")).status).toBe(200);
    // The model sees the tools' arguments, nothing of the caller.
    const tools = (fake.calls[0]!.body as { tools: { function: { name: string; parameters: { properties: Record<string, unknown> } } }[] }).tools;
    expect(tools.map((x) => x.function.name).sort()).toEqual(["forget", "recall", "remember"]);
    expect(Object.keys(tools.find((x) => x.function.name === "remember")!.function.parameters.properties).sort()).toEqual([
      "key",
      "kind",
      "scope",
      "text",
      "ttl_seconds",
    ]);

    // No scope named: the agent's first long-lived layer the key may write.
    const stored = await factsIn(t.tenant, "organization:acme");
    const city = stored.filter((f) => f.key === "home-city");
    expect(city).toEqual([expect.objectContaining({ kind: "profile", text: "The user lives in Lisbon.", version: 1 })]);

    const res = await chat(t.adminKey, thread, "Actually I moved to Berlin. Where do I live?");
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toBe("You live in Berlin.");
    expect((await factsIn(t.tenant, "organization:acme")).filter((f) => f.key === "home-city")).toEqual([
      expect.objectContaining({ id: city[0]!.id, text: "The user moved to Berlin.", version: 2 }),
    ]);
    const tm = await toolMessages(t.adminKey, thread);
    expect(tm.map((m) => m.tool_call_id)).toEqual(["call_remember", "call_remember", "call_recall"]);
    expect(JSON.parse(tm[1]!.content!)).toMatchObject({ key: "home-city", replaced: true, version: 2 });
    const recalled = JSON.parse(tm[2]!.content!) as { facts: { id: string; text: string; score: number }[] };
    expect(recalled.facts[0]).toMatchObject({ id: city[0]!.id, text: "The user moved to Berlin." });
    // The recall result went back to the model.
    expect(wireText(wireMessages(fake.last.body).at(-1)!)).toContain("moved to Berlin");

    // forget by key, then by an unknown key: a tool error, the run still answers.
    fakeOpenAI()
      .reply({
        tool_calls: [
          { id: "c1", name: "forget", arguments: { key: "home-city" } },
          { id: "c2", name: "forget", arguments: { key: "no-such-key" } },
        ],
      })
      .reply("Forgotten.");
    expect((await chat(t.adminKey, thread, "Forget where I live.")).status).toBe(200);
    expect((await factsIn(t.tenant, "organization:acme")).filter((f) => f.key === "home-city")).toEqual([]);
    const last = (await toolMessages(t.adminKey, thread)).slice(-2);
    expect(JSON.parse(last[0]!.content!)).toMatchObject({ id: city[0]!.id, deleted: true });
    expect(last[1]!.content).toMatch(/^Error: 'forget' failed: No fact with key 'no-such-key'/);
  });

  it("a member key: writing or reading outside its grants is a tool error, nothing stored; inside its grants works", async () => {
    const t = tenant();
    const thread = uniqueThread();
    const orgBefore = await factsIn(t.tenant, "organization:acme");
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "secret", text: "The merger codename is BLUEBIRD." } });
    const secret = (await factsIn(t.tenant, "organization:acme")).find((f) => f.text.includes("BLUEBIRD"))!;
    fakeOpenAI()
      .reply({
        tool_calls: [
          { id: "w1", name: "remember", arguments: { kind: "note", text: "implicit scope" } },
          { id: "w2", name: "remember", arguments: { scope: "organization:acme", kind: "note", text: "explicit outside" } },
          { id: "w3", name: "remember", arguments: { scope: "session", kind: "note", text: "own session, no grant" } },
          { id: "w4", name: "remember", arguments: { scope: "organization:other-tenant", kind: "note", text: "x" } },
          { id: "r1", name: "recall", arguments: { query: "merger codename", scopes: ["organization:acme"] } },
          { id: "r2", name: "recall", arguments: { query: "merger codename" } },
          { id: "f1", name: "forget", arguments: { id: secret.id } },
          { id: "ok", name: "remember", arguments: { scope: "docset:manual", kind: "note", key: "k", text: "Inside the grant." } },
        ],
      })
      .reply("Done.");
    const res = await chat(t.memberKey, thread, "Try everything.", ["session"]);
    expect(res.status).toBe(200);
    const tm = new Map((await toolMessages(t.adminKey, thread)).map((m) => [m.tool_call_id, m]));
    // The member reaches this thread through its session:* grant, so its own session is writable (w1, w3).
    for (const id of ["w2", "w4", "r1"]) {
      expect(tm.get(id)!.content, id).toMatch(/^Error: '(remember|recall|forget)' failed: .*(grant|writable)/);
      expect(tm.get(id)!.metadata?.error).toBe("BEM-080");
    }
    // A fact outside the grants reads as absent by id: the refusal does not tell the id exists.
    expect(tm.get("f1")!.content).toMatch(/^Error: 'forget' failed: No fact with id/);
    expect(tm.get("f1")!.metadata?.error).toBe("BEM-080");
    // Without scopes, recall searches only the layers the key may read: the organization is not one of them.
    expect(JSON.parse(tm.get("r2")!.content!)).toEqual({ facts: [] });
    expect(JSON.parse(tm.get("ok")!.content!)).toMatchObject({ scope: "docset:manual", key: "k", replaced: false });
    expect((await factsIn(t.tenant, "organization:acme")).length).toBe(orgBefore.length + 1);
    expect(await factsIn(t.tenant, "organization:acme")).toContainEqual(expect.objectContaining({ id: secret.id }));
    expect((await factsIn(t.tenant, `session:${thread}`)).map((f) => f.text).sort()).toEqual(["implicit scope", "own session, no grant"]);
    expect((await factsIn(t.tenant, "docset:manual")).map((f) => f.text)).toEqual(["Inside the grant."]);
  });

  it("tenants are isolated: recall and forget never reach another tenant's facts in a scope of the same name", async () => {
    const a = tenant();
    const b = await createTenant();
    await api("/v1/memory/facts", {
      key: a.adminKey,
      body: { scope: "organization:acme", kind: "secret", key: "launch", text: "Tenant A launch codeword PELICAN." },
    });
    const aFact = (await factsIn(a.tenant, "organization:acme")).find((f) => f.key === "launch")!;
    fakeOpenAI()
      .reply({
        tool_calls: [
          { id: "r", name: "recall", arguments: { query: "launch codeword PELICAN", scopes: ["organization:acme", "system"] } },
          { id: "f", name: "forget", arguments: { id: aFact.id } },
          { id: "k", name: "forget", arguments: { key: "launch", scope: "organization:acme" } },
        ],
      })
      .reply("Nothing found.");
    const thread = uniqueThread();
    expect((await chat(b.adminKey, thread, "What is the launch codeword?")).status).toBe(200);
    const tm = new Map((await toolMessages(b.adminKey, thread)).map((m) => [m.tool_call_id, m.content]));
    expect(JSON.parse(tm.get("r")!)).toEqual({ facts: [] });
    expect(tm.get("f")).toMatch(/^Error: 'forget' failed: No fact with id/);
    expect(tm.get("k")).toMatch(/^Error: 'forget' failed: No fact with key/);
    expect(await factsIn(a.tenant, "organization:acme")).toContainEqual(expect.objectContaining({ id: aFact.id }));
  });

  it("works through /v1/invoke too", async () => {
    const t = tenant();
    fakeOpenAI()
      .reply(call("remember", { scope: "docset:faq", kind: "faq", text: "Opening hours are 9 to 5." }))
      .reply("Saved.");
    const res = await api("/v1/invoke", {
      key: t.adminKey,
      body: {
        agent_name: "memory-assistant",
        session_id: uniqueThread(),
        model_override: "gpt-4o-mini",
        content: [{ type: "text", text: "Remember our hours." }],
      },
    });
    expect(res.status).toBe(200);
    expect((await factsIn(t.tenant, "docset:faq")).map((f) => f.text)).toEqual(["Opening hours are 9 to 5."]);
  });

  it("works through /v1/responses too: the tools run server-side, the output is the final answer, the response reports the loaded facts", async () => {
    const t = tenant();
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "policy", text: "Returns are free within 30 days." } });
    fakeOpenAI()
      .reply(call("remember", { scope: "docset:shop", kind: "faq", key: "hours", text: "The shop opens at 10." }))
      .reply(call("recall", { query: "when does the shop open", scopes: ["docset:shop"] }))
      .reply("It opens at 10.");
    const res = await api("/v1/responses", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", agent: "memory-assistant", input: "Remember we open at 10, then tell me when we open." },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      output: { type: string }[];
      output_text?: string;
      edgeweave: { thread_id: string; memory?: { facts: { kind: string; loaded: boolean; reason: string }[] } };
    };
    expect(body.output.map((o) => o.type)).toEqual(["message"]); // server tools are not handed to the client as function_call items
    expect((await factsIn(t.tenant, "docset:shop")).map((f) => [f.key, f.text])).toEqual([["hours", "The shop opens at 10."]]);
    const tm = await toolMessages(t.adminKey, body.edgeweave.thread_id);
    expect(tm.map((m) => m.tool_call_id)).toEqual(["call_remember", "call_recall"]);
    expect(JSON.parse(tm[1]!.content!).facts[0]).toMatchObject({ key: "hours", text: "The shop opens at 10." });
    expect(body.edgeweave.memory?.facts).toContainEqual(expect.objectContaining({ kind: "policy", loaded: true, reason: "fits" }));
  });

  it("the agent's recall finds a fact that shares no word with its query, by meaning, and says which channel found it", async () => {
    const t = tenant();
    const scope = `docset:family-${crypto.randomUUID().slice(0, 8)}`;
    for (const text of [...OTHER, planted[3]!.turn]) {
      expect((await api("/v1/memory/facts", { key: t.adminKey, body: { scope, kind: "note", text } })).status).toBe(201);
    }
    fakeOpenAI()
      .reply(call("recall", { query: planted[3]!.question, scopes: [scope], limit: 3 }))
      .reply("Grandpa is in hospital.");
    const thread = uniqueThread();
    expect((await chat(t.adminKey, thread, "Is anyone in the family unwell?")).status).toBe(200);
    const recalled = JSON.parse((await toolMessages(t.adminKey, thread))[0]!.content!).facts as { text: string; channels: Record<string, unknown> }[];
    const hit = recalled.find((f) => f.text === planted[3]!.turn);
    expect(hit?.channels).toMatchObject({ dense: { rank: expect.any(Number), score: expect.any(Number) } });
    expect(hit?.channels.full_text).toBeUndefined();
  });

  it("a webhook turn acts with the hook's registered grants: recall reads within them, outside is a tool error, remembering is refused (the hook was not registered with write_facts)", async () => {
    const t = tenant();
    await api("/v1/memory/facts", {
      key: t.adminKey,
      body: { scope: "organization:acme", kind: "faq", key: "wh-hours", text: "Support answers webhooks 24/7." },
    });
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "docset:private", kind: "faq", text: "Support answers webhooks only on Mondays." } });
    const hook = await registerHook(t, { agent_name: "memory-assistant" }); // grants: session:*, organization:acme
    fakeOpenAI()
      .reply({
        tool_calls: [
          { id: "w", name: "remember", arguments: { kind: "note", text: "from a webhook" } },
          { id: "r", name: "recall", arguments: { query: "when does support answer webhooks", scopes: ["organization:acme"] } },
          { id: "x", name: "recall", arguments: { query: "when does support answer webhooks", scopes: ["docset:private"] } },
        ],
      })
      .reply("Handled.");
    const thread = `wh-${crypto.randomUUID().slice(0, 8)}`;
    expect((await deliver(hook, { ticket: { id: thread, body: "Please remember this." } }, { deliveryId: "m-1" })).status).toBe(202);
    const row = await waitFor("delivery done", async () => {
      const r = await deliveryRow(hook.id, "m-1");
      return r?.status === "done" ? r : undefined;
    });
    expect(JSON.parse(row.result ?? "{}")).toMatchObject({ reply: "Handled." });
    const tm = new Map((await toolMessages(t.adminKey, thread)).map((m) => [m.tool_call_id, m.content]));
    expect(tm.get("w")).toMatch(/^Error: 'remember' failed: No memory layer of this run is writable/);
    // Within the grants only; best first by words (facts near in meaning may follow it: recall ranks by both).
    const recalled = JSON.parse(tm.get("r")!).facts as { key: string | null; scope: string }[];
    expect(recalled[0]?.key).toBe("wh-hours");
    expect(new Set(recalled.map((f) => f.scope))).toEqual(new Set(["organization:acme"]));
    expect(tm.get("x")).toMatch(/^Error: 'recall' failed: .*outside this key's grants/);
    expect(await factsIn(t.tenant, `session:${thread}`)).toEqual([]);
  });

  it("a hook registered with write_facts remembers and forgets within its grants, and nowhere else", async () => {
    const t = tenant();
    const hook = await registerHook(t, { agent_name: "memory-assistant", write_facts: true }); // grants: session:*, organization:acme
    const privateBefore = await factsIn(t.tenant, "docset:private");
    fakeOpenAI()
      .reply({
        tool_calls: [
          { id: "w", name: "remember", arguments: { scope: "organization:acme", kind: "faq", key: "wh-note", text: "Tickets close after 7 days." } },
          { id: "x", name: "remember", arguments: { scope: "docset:private", kind: "faq", text: "not for hooks" } },
          { id: "s", name: "remember", arguments: { scope: "system", kind: "rule", text: "not for hooks either" } },
        ],
      })
      .reply("Noted.")
      .reply(call("forget", { key: "wh-note", scope: "organization:acme" }))
      .reply("Forgotten.");
    const thread = `wh-${crypto.randomUUID().slice(0, 8)}`;
    expect((await deliver(hook, { ticket: { id: thread, body: "Remember the closing rule." } }, { deliveryId: "w-1" })).status).toBe(202);
    await waitFor("first delivery", async () => ((await deliveryRow(hook.id, "w-1"))?.status === "done" ? true : undefined));
    const tm = new Map((await toolMessages(t.adminKey, thread)).map((m) => [m.tool_call_id, m.content]));
    expect(JSON.parse(tm.get("w")!)).toMatchObject({ scope: "organization:acme", key: "wh-note" });
    expect(tm.get("x")).toMatch(/^Error: 'remember' failed: .*outside this key's grants/);
    expect(tm.get("s")).toMatch(/^Error: 'remember' failed: Only the operator key writes system facts/);
    expect((await factsIn(t.tenant, "organization:acme")).filter((f) => f.key === "wh-note").map((f) => f.text)).toEqual(["Tickets close after 7 days."]);
    expect(await factsIn(t.tenant, "docset:private")).toEqual(privateBefore);
    expect((await deliver(hook, { ticket: { id: thread, body: "Forget it again." } }, { deliveryId: "w-2" })).status).toBe(202);
    await waitFor("second delivery", async () => ((await deliveryRow(hook.id, "w-2"))?.status === "done" ? true : undefined));
    expect((await factsIn(t.tenant, "organization:acme")).filter((f) => f.key === "wh-note")).toEqual([]);
  });

  it("a key created with an exact grant may remember there by default", async () => {
    const t = tenant();
    const k = await createKey(t.tenant, { role: "member", scopes: ["organization:acme", "session:*"] });
    fakeOpenAI()
      .reply(call("remember", { kind: "style", key: "tone", text: "Friendly tone." }))
      .reply("ok");
    expect((await chat(k.key, uniqueThread(), "Be friendly.")).status).toBe(200);
    expect((await factsIn(t.tenant, "organization:acme")).filter((f) => f.key === "tone").map((f) => f.text)).toEqual(["Friendly tone."]);
  });
});
