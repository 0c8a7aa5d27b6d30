import { describe, expect, it } from "vitest";
import { completionAfter, fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, wireMessages, wireText } from "../support/runs";
import { api, createTenant } from "../support/tenants";
import { collect, sdkClient } from "./support";

const tenant = tenantForRuns();

/** Runs pin the model the fake serves (config.configurable.model, as chat's `model`). */
const config = { configurable: { model: "gpt-4o-mini" } };

type Msg = { type: string; id: string; content: unknown; tool_calls?: unknown[] };
type Values = { messages: Msg[] };

describe("LangGraph runs through the SDK's Client", () => {
  it("streams a run on a thread: metadata first, token chunks with metadata, updates, values; every event has an id", async () => {
    const fake = fakeOpenAI().reply({ text: "Hello there, Ann", chunks: ["Hello", " there", ", Ann"] });
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = await collect(
      client.runs.stream(thread_id, "support", {
        config,
        input: { messages: [{ type: "human", content: "hi, I am Ann", id: "h-1" }] },
        streamMode: ["values", "messages-tuple", "updates"],
        onRunCreated: (r) => {
          created = r;
        },
      }),
    );
    expect(parts[0]).toMatchObject({ event: "metadata", data: { run_id: created?.run_id } });
    expect(created?.thread_id).toBe(thread_id);
    expect(parts.map((p) => (p as { id?: string }).id)).toEqual(parts.map((_, i) => `${i}-${created!.run_id.slice(0, 8)}`));
    expect(parts[1]).toMatchObject({ event: "values", data: { messages: [{ type: "human", id: "h-1", content: "hi, I am Ann" }] } });
    const tokens = parts.filter((p) => p.event === "messages");
    expect(tokens.map((p) => (p.data as unknown as [{ content: string }])[0].content)).toEqual(["Hello", " there", ", Ann"]);
    expect((tokens[0]!.data as [unknown, Record<string, unknown>])[1]).toMatchObject({ langgraph_node: "model", graph_id: "support", thread_id });
    expect((tokens[0]!.data as unknown as [{ type: string }])[0].type).toBe("AIMessageChunk");
    const updates = parts.filter((p) => p.event === "updates");
    expect(updates).toMatchObject([{ data: { model: { messages: [{ type: "ai", content: "Hello there, Ann" }] } } }]);
    const last = parts.at(-1)!;
    expect(last.event).toBe("values");
    expect((last.data as Values).messages.map((m) => [m.type, m.content])).toEqual([
      ["human", "hi, I am Ann"],
      ["ai", "Hello there, Ann"],
    ]);
    // The agent ran: its system prompt went to the model; the answer is the thread's, in every API.
    expect(wireText(wireMessages(fake.last.body)[0]!)).toContain("customer support");
    const state = await client.threads.getState<Values>(thread_id);
    expect(state.values.messages.map((m) => m.id)).toEqual((last.data as Values).messages.map((m) => m.id));
    const chat = (await (await api(`/v1/threads/${thread_id}/state`, { key: tenant().adminKey })).json()) as { channels: { messages: unknown[] } };
    expect(chat.channels.messages).toHaveLength(2);
    // Stamped for Agent Chat UI's history list, which searches by graph_id.
    const thread = await client.threads.get(thread_id);
    expect(thread.metadata).toMatchObject({ graph_id: "support" });
    const found = await client.threads.search({ metadata: { graph_id: "support" }, limit: 100 });
    expect(found.map((t) => t.thread_id)).toContain(thread_id);
  });

  it("messages mode: partial messages as they grow, then the complete message", async () => {
    fakeOpenAI().reply({ text: "abc", chunks: ["a", "b", "c"] });
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const parts = await collect(
      client.runs.stream(thread_id, "assistant", { config, input: { messages: [{ role: "user", content: "x" }] }, streamMode: "messages" }),
    );
    expect(parts.map((p) => p.event)).toEqual([
      "metadata",
      "messages/metadata",
      "messages/partial",
      "messages/partial",
      "messages/partial",
      "messages/complete",
    ]);
    expect(parts.filter((p) => p.event === "messages/partial").map((p) => (p.data as Msg[])[0]!.content)).toEqual(["a", "ab", "abc"]);
    expect((parts.at(-1)!.data as Msg[])[0]).toMatchObject({ type: "ai", content: "abc" });
  });

  it("waits for a run: the thread's values; a second run continues the thread", async () => {
    const fake = fakeOpenAI().reply("first").reply("second");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const one = (await client.runs.wait(thread_id, "assistant", { config, input: { messages: [{ type: "human", content: "one" }] } })) as Values;
    expect(one.messages.map((m) => m.content)).toEqual(["one", "first"]);
    const two = (await client.runs.wait(thread_id, "assistant", { config, input: { messages: [{ type: "human", content: "two" }] } })) as Values;
    expect(two.messages.map((m) => m.content)).toEqual(["one", "first", "two", "second"]);
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(expect.arrayContaining(["one", "first", "two"]));
  });

  it("runs without a thread: stream and wait, nothing kept; on_completion keep runs on a new thread", async () => {
    fakeOpenAI().reply("streamed").reply("waited").reply("kept");
    const client = sdkClient(tenant().adminKey);
    const parts = await collect(client.runs.stream(null as unknown as string, "assistant", { config, input: { messages: [{ type: "human", content: "q" }] } }));
    expect((parts.at(-1)!.data as Values).messages.map((m) => m.content)).toEqual(["q", "streamed"]);
    expect(((await client.runs.wait(null, "assistant", { config, input: { messages: [{ type: "human", content: "q" }] } })) as Values).messages).toHaveLength(
      2,
    );
    let kept: string | undefined;
    await collect(
      client.runs.stream(null as unknown as string, "assistant", {
        config,
        input: { messages: [{ type: "human", content: "keep" }] },
        onCompletion: "keep" as never, // the Python SDK's on_completion (delete | keep); the JS SDK types another meaning
        onRunCreated: (r) => {
          kept = r.thread_id;
        },
      }),
    );
    expect(kept).toBeDefined();
    expect((await client.threads.getState<Values>(kept!)).values.messages.map((m) => m.content)).toEqual(["keep", "kept"]);
  });

  it("branches from an earlier checkpoint (checkpoint on the run): the old branch stays in history", async () => {
    fakeOpenAI().reply("a1").reply("a2").reply("b2");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "assistant", { config, input: { messages: [{ type: "human", content: "q1" }] } });
    const first = await client.threads.getState(thread_id);
    await client.runs.wait(thread_id, "assistant", { config, input: { messages: [{ type: "human", content: "q2" }] } });
    const parts = await collect(
      client.runs.stream(thread_id, "assistant", { config, input: { messages: [{ type: "human", content: "q2 edited" }] }, checkpoint: first.checkpoint }),
    );
    expect((parts.at(-1)!.data as Values).messages.map((m) => m.content)).toEqual(["q1", "a1", "q2 edited", "b2"]);
    const history = await client.threads.getHistory<Values>(thread_id, { limit: 10 });
    expect(history.map((h) => h.values.messages.at(-1)?.content)).toEqual(expect.arrayContaining(["a2", "b2"]));
    // The branch starts with a fork of the first turn's checkpoint, as time travel does on every API.
    expect(history.map((h) => h.metadata?.source)).toEqual(["input", "fork", "input", "input"]);
    expect(history[1]!.parent_checkpoint?.checkpoint_id).toBe(first.checkpoint.checkpoint_id);
    expect(history[0]!.parent_checkpoint?.checkpoint_id).toBe(history[1]!.checkpoint.checkpoint_id);
  });
});

describe("LangGraph runs: bad input is a clear 4xx and changes nothing", () => {
  it("unknown assistant or thread: 404; if_not_exists create makes the thread", async () => {
    fakeOpenAI().reply("made");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    await expect(client.runs.wait(thread_id, "nobody", { config, input: { messages: [{ type: "human", content: "x" }] } })).rejects.toMatchObject({
      status: 404,
    });
    const missing = crypto.randomUUID();
    await expect(client.runs.wait(missing, "assistant", { config, input: { messages: [{ type: "human", content: "x" }] } })).rejects.toMatchObject({
      status: 404,
    });
    await expect(client.threads.get(missing)).rejects.toMatchObject({ status: 404 });
    await client.runs.wait(missing, "assistant", { config, input: { messages: [{ type: "human", content: "x" }] }, ifNotExists: "create" });
    expect((await client.threads.get(missing)).metadata).toMatchObject({ graph_id: "assistant" });
    expect(await client.threads.getHistory(thread_id)).toEqual([]);
  });

  it("an unknown config.configurable.model: 404 BEM-105 in this API's error shape, and if_not_exists create makes no thread", async () => {
    const thread = crypto.randomUUID();
    const res = await api(`/v1/agent-protocol/threads/${thread}/runs/wait`, {
      key: tenant().adminKey,
      body: {
        assistant_id: "assistant",
        if_not_exists: "create",
        input: { messages: [{ type: "human", content: "x" }] },
        config: { configurable: { model: "gpt-4o-mnii" } },
      },
    });
    // It answered OpenAI's shape ({code: "model_not_found", bem_code, type, param}), which only the OpenAI-compatible routes document.
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(Object.keys(body.error)).toEqual(["code", "message"]);
    expect(body.error.code).toBe("BEM-105");
    expect(body.error.message).toContain("Closest configured: gpt-4o-mini");
    await expect(sdkClient(tenant().adminKey).threads.get(thread)).rejects.toMatchObject({ status: 404 });
  });

  it("a checkpoint of another thread: 404, nothing written", async () => {
    fakeOpenAI().reply("elsewhere");
    const client = sdkClient(tenant().adminKey);
    const a = (await client.threads.create()).thread_id;
    const b = (await client.threads.create()).thread_id;
    await client.runs.wait(a, "assistant", { config, input: { messages: [{ type: "human", content: "x" }] } });
    const other = (await client.threads.getState(a)).checkpoint.checkpoint_id!;
    await expect(
      client.runs.wait(b, "assistant", { config, input: { messages: [{ type: "human", content: "y" }] }, checkpointId: other }),
    ).rejects.toMatchObject({ status: 404 });
    expect(await client.threads.getHistory(b)).toEqual([]);
  });

  it("options edgeweave does not serve are refused by name (BEM-202), not ignored", async () => {
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const input = { messages: [{ type: "human", content: "x" }] };
    for (const extra of [
      { stream_mode: "debug" },
      { stream_mode: ["values", "events"] },
      { interrupt_before: ["model"] },
      { webhook: "https://example.com/h" },
      { metadata: { k: 1 } },
      { command: { goto: "model" } },
      { config: { ...config, recursion_limit: 50 } },
    ]) {
      const res = await api(`/v1/agent-protocol/threads/${thread_id}/runs/stream`, {
        key: tenant().adminKey,
        body: { assistant_id: "assistant", config, input, ...extra },
      });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("BEM-202");
      const named = extra.config ? "recursion_limit" : extra.command ? "goto" : Object.keys(extra)[0]!;
      expect(error.message).toContain(named);
    }
    expect(await client.threads.getHistory(thread_id)).toEqual([]);
  });

  it("the runs list's select is refused by name whether the SDK sends one field or several", async () => {
    // Several fields (select=run_id&select=status, as runs.list sends an array) were 400 BEM-011 "expected string".
    const { thread_id } = await sdkClient(tenant().adminKey).threads.create();
    for (const query of ["select=run_id", "select=run_id&select=status"]) {
      const res = await api(`/v1/agent-protocol/threads/${thread_id}/runs?${query}`, { key: tenant().adminKey });
      expect(res.status, query).toBe(400);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code, query).toBe("BEM-202");
      expect(error.message).toContain("select");
    }
  });

  it("a busy thread: reject is 409; enqueue waits its turn", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    fakeOpenAI()
      .respond(completionAfter(() => gate, "slow"))
      .reply("queued");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const input = (content: string) => ({ messages: [{ type: "human", content }] });
    const slow = client.runs.wait(thread_id, "assistant", { config, input: input("first") });
    // Until the first run holds the thread, its status is idle.
    for (let i = 0; i < 50 && (await client.threads.get(thread_id)).status !== "busy"; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await client.threads.get(thread_id)).status).toBe("busy");
    await expect(client.runs.wait(thread_id, "assistant", { config, input: input("rejected"), multitaskStrategy: "reject" })).rejects.toMatchObject({
      status: 409,
    });
    const queued = client.runs.wait(thread_id, "assistant", { config, input: input("second"), multitaskStrategy: "enqueue" });
    open();
    await slow;
    const values = (await queued) as Values;
    expect(values.messages.map((m) => m.content)).toEqual(["first", "slow", "second", "queued"]);
  });
});

describe("LangGraph runs: the key's grants decide, as on every run path", () => {
  it("a member key runs on the threads its grants reach, may not branch (rewrite), and reaches no other thread", async () => {
    fakeOpenAI().reply("member answer");
    // The assistant agent loads organization:acme: a key without it may not run the agent (403 BEM-023).
    const t = await createTenant({ memberScopes: ["session:mine-*", "organization:acme"] });
    const member = sdkClient(t.memberKey);
    const admin = sdkClient(t.adminKey);
    const mine = `mine-${crypto.randomUUID()}`;
    await member.threads.create({ threadId: mine });
    await member.runs.wait(mine, "assistant", { config, input: { messages: [{ type: "human", content: "hi" }] } });
    const head = await member.threads.getState(mine);
    await expect(
      member.runs.wait(mine, "assistant", { config, input: { messages: [{ type: "human", content: "again" }] }, checkpoint: head.checkpoint }),
    ).rejects.toMatchObject({ status: 403 });
    const other = (await admin.threads.create()).thread_id;
    await expect(member.runs.wait(other, "assistant", { config, input: { messages: [{ type: "human", content: "x" }] } })).rejects.toMatchObject({
      status: 403,
    });
    await expect(member.threads.create({ threadId: "not-mine" })).rejects.toMatchObject({ status: 403 });
    expect(await admin.threads.getHistory(other)).toEqual([]);
  });
});
