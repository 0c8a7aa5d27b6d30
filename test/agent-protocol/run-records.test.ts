import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { threadObjectName } from "../../src/thread/thread-id";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns } from "../support/runs";
import { api } from "../support/tenants";
import { collect, sdkClient } from "./support";

const tenant = tenantForRuns();
const config = { configurable: { model: "gpt-4o-mini" } };
const input = (content: string) => ({ messages: [{ type: "human", content }] });
type Values = { messages: { type: string; content: unknown }[] };

/** An OpenAI chat stream that sends `first`, waits for `gate`, then sends `rest` and ends. */
const pausedStream = (first: string, gate: Promise<void>, rest: string) => async () => {
  const frame = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(enc.encode(frame({ role: "assistant", content: first })));
      await gate;
      controller.enqueue(enc.encode(frame({ content: rest })));
      controller.enqueue(enc.encode(frame({}, "stop")));
      controller.enqueue(enc.encode("data: [DONE]\n\n"));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
};

/** Streams a run until its first token, then goes away as a client that lost its connection: the run's id, the events seen and the last id. */
async function leaveAfterFirstToken(
  client: ReturnType<typeof sdkClient>,
  threadId: string,
  opts: { content: string; streamMode: ("messages-tuple" | "values")[]; onDisconnect?: "cancel" },
) {
  const ac = new AbortController();
  let runId = "";
  let lastId: string | undefined;
  const seen: string[] = [];
  for await (const part of client.runs.stream(threadId, "assistant", {
    config,
    input: input(opts.content),
    streamMode: opts.streamMode,
    ...(opts.onDisconnect ? { onDisconnect: opts.onDisconnect } : {}),
    signal: ac.signal,
    onRunCreated: (r) => {
      runId = r.run_id;
    },
  })) {
    seen.push(part.event);
    lastId = (part as { id?: string }).id;
    if (part.event === "messages") {
      ac.abort();
      break;
    }
  }
  return { runId, lastId, seen };
}

describe("LangGraph runs kept in the thread: background, join, rejoin", () => {
  it("a background run answers its record at once, runs on, and is joined, listed and replayed", async () => {
    fakeOpenAI().reply({ text: "done in the background", chunks: ["done", " in the background"] });
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const run = await client.runs.create(thread_id, "assistant", { config, input: input("work"), streamMode: ["values", "messages-tuple"] });
    expect(run).toMatchObject({ thread_id, status: "pending", multitask_strategy: "reject" });
    const values = (await client.runs.join(thread_id, run.run_id)) as Values;
    expect(values.messages.map((m) => m.content)).toEqual(["work", "done in the background"]);
    expect(await client.runs.get(thread_id, run.run_id)).toMatchObject({ run_id: run.run_id, status: "success" });
    expect((await client.runs.list(thread_id)).map((r) => r.run_id)).toEqual([run.run_id]);
    // The whole run replays from its kept events; after an event, from the next one.
    const all = await collect(client.runs.joinStream(thread_id, run.run_id));
    expect(all.map((p) => p.event)).toEqual(["metadata", "values", "messages", "messages", "values"]);
    const tail = await collect(client.runs.joinStream(thread_id, run.run_id, { lastEventId: all[2]!.id }));
    expect(tail.map((p) => p.id)).toEqual(all.slice(3).map((p) => p.id));
    const onlyValues = await collect(client.runs.joinStream(thread_id, run.run_id, { streamMode: "values" }));
    expect(onlyValues.map((p) => p.event)).toEqual(["metadata", "values", "values"]);
  });

  it("a stream cut mid-run: the run finishes and is saved, and a rejoin with Last-Event-ID gets the rest", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    fakeOpenAI().respond(pausedStream("Hel", gate, "lo"));
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const { runId, lastId, seen } = await leaveAfterFirstToken(client, thread_id, { content: "say hello", streamMode: ["messages-tuple", "values"] });
    expect(seen).toEqual(["metadata", "values", "messages"]);
    expect((await client.runs.get(thread_id, runId)).status).toBe("running");
    open();
    const rest = await collect(client.runs.joinStream(thread_id, runId, { lastEventId: lastId }));
    expect(rest.map((p) => p.event)).toEqual(["messages", "values"]);
    expect((rest.at(-1)!.data as Values).messages.map((m) => m.content)).toEqual(["say hello", "Hello"]);
    expect((await client.runs.get(thread_id, runId)).status).toBe("success");
    expect((await client.threads.getState<Values>(thread_id)).values.messages.map((m) => m.content)).toEqual(["say hello", "Hello"]);
  });

  it("Last-Event-ID -1 (useStream's rejoin after a reload) replays the run from its first event", async () => {
    fakeOpenAI().reply("Hello");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const run = await client.runs.create(thread_id, "assistant", { config, input: input("hi"), streamMode: ["values"] });
    await client.runs.join(thread_id, run.run_id);
    const all = await collect(client.runs.joinStream(thread_id, run.run_id));
    const fromStart = await collect(client.runs.joinStream(thread_id, run.run_id, { lastEventId: "-1" }));
    expect(fromStart.map((p) => [p.event, p.id])).toEqual(all.map((p) => [p.event, p.id]));
    expect(fromStart.map((p) => p.event)).toEqual(["metadata", "values", "values"]);
  });

  it("bad input: unknown run 404, cancel of a finished run 409, a Last-Event-ID of another run 400, nothing changed", async () => {
    fakeOpenAI().reply("one").reply("two");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const a = await client.runs.create(thread_id, "assistant", { config, input: input("a") });
    await client.runs.join(thread_id, a.run_id);
    const b = await client.runs.create(thread_id, "assistant", { config, input: input("b") });
    await client.runs.join(thread_id, b.run_id);
    const [firstOfA] = await collect(client.runs.joinStream(thread_id, a.run_id));
    await expect(client.runs.get(thread_id, crypto.randomUUID())).rejects.toMatchObject({ status: 404 });
    await expect(client.runs.join(thread_id, crypto.randomUUID())).rejects.toMatchObject({ status: 404 });
    await expect(client.runs.cancel(thread_id, a.run_id)).rejects.toMatchObject({ status: 409 });
    const res = await api(`/v1/agent-protocol/threads/${thread_id}/runs/${b.run_id}/stream`, {
      key: tenant().adminKey,
      headers: { "last-event-id": firstOfA!.id! },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-011");
    // A join stream's stream_mode is checked as a run's is: it took any word and streamed the metadata alone.
    for (const [mode, code] of [
      ["bogus", "BEM-011"],
      ["debug", "BEM-202"],
    ]) {
      const join = await api(`/v1/agent-protocol/threads/${thread_id}/runs/${b.run_id}/stream?stream_mode=${mode}`, { key: tenant().adminKey });
      expect([mode, join.status]).toEqual([mode, 400]);
      expect(((await join.json()) as { error: { code: string } }).error.code).toBe(code);
    }
    const values = await api(`/v1/agent-protocol/threads/${thread_id}/runs/${b.run_id}/stream?stream_mode=values`, { key: tenant().adminKey });
    expect(await values.text()).toMatch(/^event: metadata\n[\s\S]*event: values\n/);
    expect((await client.runs.list(thread_id)).map((r) => [r.run_id, r.status])).toEqual([
      [b.run_id, "success"],
      [a.run_id, "success"],
    ]);
    // A bad branch point refuses the background run before anything is recorded.
    await expect(client.runs.create(thread_id, "assistant", { config, input: input("c"), checkpointId: "0000000000000000" })).rejects.toMatchObject({
      status: 404,
    });
    expect(await client.runs.list(thread_id)).toHaveLength(2);
  });
});

describe("LangGraph runs cancelled", () => {
  it("cancel stops a running run: it saves nothing, is interrupted, and the thread takes the next run", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    fakeOpenAI()
      .respond(pausedStream("Hel", gate, "lo"))
      .reply("next");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const run = await client.runs.create(thread_id, "assistant", { config, input: input("slow"), streamMode: ["messages-tuple"] });
    for (let i = 0; i < 100 && (await client.runs.get(thread_id, run.run_id)).status !== "running"; i++) await new Promise((r) => setTimeout(r, 10));
    await client.runs.cancel(thread_id, run.run_id, true);
    expect(await client.runs.get(thread_id, run.run_id)).toMatchObject({ status: "interrupted", error: expect.stringContaining("BEM-204") });
    expect(await client.threads.getHistory(thread_id)).toEqual([]);
    await expect(client.runs.cancel(thread_id, run.run_id)).rejects.toMatchObject({ status: 409 });
    const next = (await client.runs.wait(thread_id, "assistant", { config, input: input("again") })) as Values;
    expect(next.messages.map((m) => m.content)).toEqual(["again", "next"]);
    open();
  });

  it("multitask_strategy interrupt: a new run stops the one under way and runs after it", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    fakeOpenAI()
      .respond(pausedStream("Hel", gate, "lo"))
      .reply("the newer answer");
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const first = await client.runs.create(thread_id, "assistant", { config, input: input("first") });
    for (let i = 0; i < 100 && (await client.threads.get(thread_id)).status !== "busy"; i++) await new Promise((r) => setTimeout(r, 10));
    const values = (await client.runs.wait(thread_id, "assistant", { config, input: input("second"), multitaskStrategy: "interrupt" })) as Values;
    expect(values.messages.map((m) => m.content)).toEqual(["second", "the newer answer"]);
    expect((await client.runs.get(thread_id, first.run_id)).status).toBe("interrupted");
    open();
  });
});

describe("LangGraph runs whose worker went away", () => {
  it("a run left running with its thread free ends as an error: get, join and the join stream end, the thread says error", async () => {
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    // What a worker that died mid-run leaves: the record, running, written to long ago, and no lease.
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, thread_id)));
    const runId = crypto.randomUUID();
    await stub.runAdmit(
      { run_id: runId, assistant_id: "a", status: "running", multitask_strategy: "reject", created_at: Date.now() - 60_000 },
      { reject: true, create: false },
    );
    const stream = await collect(client.runs.joinStream(thread_id, runId));
    expect(stream.map((p) => p.event)).toEqual(["error"]);
    expect(await client.runs.get(thread_id, runId)).toMatchObject({ status: "error" });
    expect(await client.runs.join(thread_id, runId)).toMatchObject({ messages: [] });
    expect((await client.threads.get(thread_id)).status).toBe("error");
  });
});

describe("LangGraph runs: on_disconnect", () => {
  it("cancel: the run stops when its client goes, saving nothing (the default, continue, is tested above)", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    fakeOpenAI().respond(pausedStream("Hel", gate, "lo"));
    const client = sdkClient(tenant().adminKey);
    const { thread_id } = await client.threads.create();
    const { runId } = await leaveAfterFirstToken(client, thread_id, { content: "hello?", streamMode: ["messages-tuple"], onDisconnect: "cancel" });
    // The model call waits on the gate: only the cancel can end the run before it opens.
    let status = "";
    for (let i = 0; i < 200 && !["interrupted", "success", "error"].includes(status); i++) {
      status = (await client.runs.get(thread_id, runId)).status;
      await new Promise((r) => setTimeout(r, 10));
    }
    open();
    expect(status).toBe("interrupted");
    expect(await client.threads.getHistory(thread_id)).toEqual([]);
  });
});
