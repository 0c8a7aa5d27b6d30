import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { openaiClient, tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";
import { sdkClient } from "./support";

const tenant = tenantForRuns();

describe("LangGraph's API: info and assistants, through the SDK's Client", () => {
  it("lists every agent as an assistant, found by graph_id or assistant_id; unknown is 404 naming the agents", async () => {
    const client = sdkClient(tenant().memberKey);
    expect((await api("/v1/agent-protocol/info", { key: tenant().memberKey })).status).toBe(200);

    const all = await client.assistants.search({ limit: 100 });
    expect(all.map((a) => a.graph_id)).toEqual(expect.arrayContaining(["assistant", "support", "planner"]));
    const support = all.find((a) => a.graph_id === "support")!;
    expect(support.assistant_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await client.assistants.get(support.assistant_id)).toEqual(support);
    expect(await client.assistants.get("support")).toEqual(support);
    expect((await client.assistants.search({ graphId: "planner" })).map((a) => a.name)).toEqual(["planner"]);
    const schemas = await client.assistants.getSchemas("planner");
    expect(schemas.context_schema).toMatchObject({ required: ["user_name"] });

    await expect(client.assistants.get("no-such-agent")).rejects.toMatchObject({ status: 404 });
    const res = await api("/v1/agent-protocol/assistants/no-such-agent", { key: tenant().memberKey });
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "BEM-047" });
  });
});

describe("LangGraph's API: threads, through the SDK's Client", () => {
  it("creates a thread with an id and metadata, refuses it again, gets it with do_nothing", async () => {
    const client = sdkClient(tenant().adminKey);
    const id = crypto.randomUUID();
    const t = await client.threads.create({ threadId: id, metadata: { owner: "ann" } });
    expect(t).toMatchObject({ thread_id: id, status: "idle", metadata: { owner: "ann" }, values: { messages: [] } });
    await expect(client.threads.create({ threadId: id })).rejects.toMatchObject({ status: 409 });
    expect((await client.threads.create({ threadId: id, ifExists: "do_nothing" })).metadata).toEqual({ owner: "ann" });
    expect((await client.threads.get(id)).thread_id).toBe(id);
    // A fresh id each time without one.
    const other = await client.threads.create();
    expect(other.thread_id).not.toBe(id);
    // Listed by edgeweave's own thread list too.
    const listed = (await (await api(`/v1/threads?query=${id}`, { key: tenant().adminKey })).json()) as { threads: { thread_id: string }[] };
    expect(listed.threads.map((x) => x.thread_id)).toEqual([id]);
  });

  it("a body left out is the defaults: search lists, create makes a thread, history pages", async () => {
    const key = tenant().adminKey;
    const id = crypto.randomUUID();
    await sdkClient(key).threads.create({ threadId: id });
    // No body and no content-type, as curl -X POST sends it.
    const bare = (path: string) => exports.default.fetch(`http://x/v1/agent-protocol${path}`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
    const search = await bare("/threads/search");
    expect(search.status, await search.clone().text()).toBe(200);
    expect(((await search.json()) as unknown[]).length).toBeGreaterThan(0);
    expect((await bare("/assistants/search")).status).toBe(200);
    expect((await bare(`/threads/${id}/history`)).status).toBe(200);
    const created = await bare("/threads");
    expect(created.status).toBe(200);
    expect(((await created.json()) as { thread_id: string }).thread_id).not.toBe(id);
  });

  it("a PATCH that changes no metadata leaves the thread's updated_at; one that does moves it", async () => {
    const client = sdkClient(tenant().adminKey);
    const t = await client.threads.create({ metadata: { owner: "ann" } });
    await new Promise((r) => setTimeout(r, 5));
    expect((await client.threads.update(t.thread_id, { metadata: {} })).updated_at).toBe(t.updated_at);
    expect((await client.threads.update(t.thread_id, { metadata: { owner: "ann" } })).updated_at).toBe(t.updated_at);
    const moved = await client.threads.update(t.thread_id, { metadata: { owner: "bob" } });
    expect(moved.metadata).toEqual({ owner: "bob" });
    expect(moved.updated_at).not.toBe(t.updated_at);
  });

  it("searches by metadata (the UI's graph_id), pages with limit/offset and sorts", async () => {
    const client = sdkClient(tenant().adminKey);
    const mark = crypto.randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await client.threads.create({ metadata: { mark, i, nested: { k: i % 2 } } })).thread_id);
    await client.threads.create({ metadata: { mark: "other" } });
    const found = await client.threads.search({ metadata: { mark }, limit: 10, sortBy: "created_at", sortOrder: "asc" });
    expect(found.map((t) => t.thread_id)).toEqual(ids);
    expect((await client.threads.search({ metadata: { mark, i: 1 } })).map((t) => t.thread_id)).toEqual([ids[1]]);
    expect((await client.threads.search({ metadata: { mark, nested: { k: 0 } }, sortBy: "created_at", sortOrder: "asc" })).map((t) => t.thread_id)).toEqual([
      ids[0],
      ids[2],
    ]);
    const page = await client.threads.search({ metadata: { mark }, limit: 1, offset: 1, sortBy: "created_at", sortOrder: "asc" });
    expect(page.map((t) => t.thread_id)).toEqual([ids[1]]);
    const selected = await client.threads.search({ metadata: { mark }, limit: 1, select: ["thread_id"] });
    expect(Object.keys(selected[0]!)).toEqual(["thread_id"]);
    // A filter edgeweave does not serve is refused, not ignored.
    await expect(client.threads.search({ metadata: { mark }, status: "busy" })).rejects.toMatchObject({ status: 400 });
  });

  it("a member key finds only the threads its grants reach", async () => {
    const admin = sdkClient(tenant().adminKey);
    const mark = crypto.randomUUID();
    await admin.threads.create({ metadata: { mark } });
    expect(await sdkClient(tenant().memberKey).threads.search({ metadata: { mark } })).toEqual([]);
  });

  it("patches metadata (merged), deletes; unknown threads are 404", async () => {
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create({ metadata: { a: 1, b: 2 } });
    expect((await client.threads.update(thread_id, { metadata: { b: 3, c: 4 } })).metadata).toEqual({ a: 1, b: 3, c: 4 });
    await client.threads.delete(thread_id);
    await expect(client.threads.get(thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(client.threads.update(thread_id, { metadata: { a: 1 } })).rejects.toMatchObject({ status: 404 });
    await expect(client.threads.getState(thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(client.threads.getHistory("no-such-thread")).rejects.toMatchObject({ status: 404 });
  });

  it("a chat-completions thread is a LangGraph thread: its messages in LangChain's shape, its checkpoints as history", async () => {
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }] })
      .reply("second answer")
      .reply("third, through LangGraph's API");
    const thread = uniqueThread("ap");
    const openai = openaiClient(tenant().adminKey);
    const tools = [{ type: "function" as const, function: { name: "lookup", parameters: { type: "object", properties: {} } } }];
    const body = { model: "gpt-4o-mini", thread_id: thread, tools } as const;
    await openai.chat.completions.create({ ...body, messages: [{ role: "user", content: "hello" }] } as never);
    await openai.chat.completions.create({
      ...body,
      messages: [
        { role: "user", content: "hello" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: "found" },
      ],
    } as never);
    expect(fake.calls).toHaveLength(2);

    const client = sdkClient(tenant().adminKey);
    const state = await client.threads.getState<{ messages: Record<string, unknown>[] }>(thread);
    expect(state.values.messages.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"]);
    expect(state.values.messages[1]).toMatchObject({ tool_calls: [{ id: "call_1", name: "lookup", args: { q: "x" }, type: "tool_call" }] });
    expect(state.values.messages[2]).toMatchObject({ type: "tool", tool_call_id: "call_1", content: "found", status: "success" });
    expect(state.values.messages[3]).toMatchObject({ type: "ai", content: "second answer" });
    expect(state.values.messages.every((m) => typeof m.id === "string")).toBe(true);
    expect(state.checkpoint).toMatchObject({ thread_id: thread, checkpoint_ns: "" });

    const history = await client.threads.getHistory<{ messages: unknown[] }>(thread, { limit: 10 });
    expect(history).toHaveLength(2);
    expect(history[0]!.checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
    expect(history[0]!.parent_checkpoint?.checkpoint_id).toBe(history[1]!.checkpoint.checkpoint_id);
    expect(history[1]!.values.messages).toHaveLength(2);
    expect(history[0]!.metadata).toMatchObject({ source: "input" });
    // Paged: before the newest, and at a checkpoint.
    expect(
      (await client.threads.getHistory(thread, { limit: 10, before: { configurable: history[0]!.checkpoint } })).map((h) => h.checkpoint.checkpoint_id),
    ).toEqual([history[1]!.checkpoint.checkpoint_id]);
    const older = await client.threads.getState<{ messages: unknown[] }>(thread, history[1]!.checkpoint.checkpoint_id!);
    expect(older.values.messages).toHaveLength(2);
    expect((await client.threads.getState(thread, history[1]!.checkpoint)).checkpoint.checkpoint_id).toBe(history[1]!.checkpoint.checkpoint_id);
    await expect(client.threads.getState(thread, "0000000000000000000000000000")).rejects.toMatchObject({ status: 404 });
    expect((await client.threads.get(thread)).status).toBe("idle");
    // And back: a LangGraph run continues the chat thread, which chat completions then reads.
    const config = { configurable: { model: "gpt-4o-mini" } };
    await client.runs.wait(thread, "assistant", { config, input: { messages: [{ type: "human", content: "and now?" }] } });
    const after = (await (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).json()) as { channels: { messages: { content: unknown }[] } };
    expect(after.channels.messages.map((m) => m.content).slice(-2)).toEqual(["and now?", "third, through LangGraph's API"]);
  });

  it("updates state: appends a message as one checkpoint; a checkpoint on the update is refused, nothing written", async () => {
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const written = await client.threads.updateState(thread_id, { values: { messages: [{ type: "human", content: "noted", id: "m-1" }] } });
    const checkpoint = written.configurable!;
    const state = await client.threads.getState<{ messages: { id: string; content: string }[] }>(thread_id);
    expect(state.checkpoint.checkpoint_id).toBe(checkpoint.checkpoint_id);
    expect(state.values.messages).toMatchObject([{ id: "m-1", content: "noted", type: "human" }]);
    await expect(client.threads.updateState(thread_id, { values: { messages: [] }, checkpointId: checkpoint.checkpoint_id! })).rejects.toMatchObject({
      status: 400,
    });
    expect(await client.threads.getHistory(thread_id)).toHaveLength(1);
  });
});

describe("LangGraph's API: what edgeweave does not serve", () => {
  it("answers 404 naming what is served (crons, assistant writes, thread copy, runs batch, the store here)", async () => {
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    for (const call of [
      () => client.crons.search(),
      () => client.assistants.create({ graphId: "assistant" }),
      () => client.assistants.getGraph("assistant"),
      () => client.threads.copy(thread_id),
      () => client.runs.createBatch([{ assistantId: "assistant" }]),
      () => client.store.getItem(["docset", "d"], "k"),
    ]) {
      await expect(call()).rejects.toMatchObject({ status: 404 });
    }
    const res = await api("/v1/agent-protocol/crons/search", { key: tenant().adminKey, body: {} });
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("BEM-002");
    expect(error.message).toContain("POST /crons/search is not served");
    expect(error.message).toContain("POST /threads/{id}/runs/stream");
    expect((await api("/v1/agent-protocol/store/items?namespace=docset.d&key=k", { key: tenant().adminKey })).status).toBe(404);
    // The key is checked first.
    expect((await api("/v1/agent-protocol/crons/search", { body: {} })).status).toBe(401);
  });

  it("every other SDK call on a served path answers 404 naming what is served, not a 405 that takes its word for an id", async () => {
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const run = await client.runs.create(thread_id, "assistant", {
      input: { messages: [{ type: "human", content: "hi" }] },
      config: { configurable: { model: "offline-echo" } },
    });
    await client.runs.join(thread_id, run.run_id);
    for (const [name, call] of [
      ["threads.count", () => client.threads.count()],
      ["threads.prune", () => client.threads.prune([thread_id])],
      ["threads.patchState", () => client.threads.patchState(thread_id, { k: "v" })],
      ["assistants.count", () => client.assistants.count()],
      ["assistants.update", () => client.assistants.update("assistant", { name: "renamed" })],
      ["assistants.delete", () => client.assistants.delete("assistant")],
      ["runs.delete", () => client.runs.delete(thread_id, run.run_id)],
    ] as const) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e as { status?: number; message?: string },
      );
      expect([name, err?.status]).toEqual([name, 404]);
      expect(err?.message, name).toContain("BEM-002");
      expect(err?.message, name).toContain("Served: GET /info");
    }
    // What a path does answer is named too.
    const res = await api(`/v1/agent-protocol/threads/${thread_id}/history`, { key: tenant().adminKey });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("answers POST");
    // Nothing was changed: the thread, its run and the assistant are as they were.
    expect((await client.runs.get(thread_id, run.run_id)).status).toBe("success");
    expect((await client.assistants.get("assistant")).name).toBe("assistant");
  });
});
