import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Annotation, Command, DeltaChannel, END, interrupt, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import type { ThreadDO } from "../../src/object/thread-object";
import { threadObjectName } from "../../src/thread/thread-id";
import { api, createTenant } from "../support/tenants";
import { saverFor } from "./support";

/**
 * Issue #24.7: old LangGraph checkpoints can be pruned (keep the newest N, or from a checkpoint
 * on) and the thread stays resumable: the graph goes on from its head, an interrupt still
 * resumes, and the bytes held go down.
 */
const stubOf = (tenant: string, threadId: string) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, threadId)));
const storedBytes = (tenant: string, thread: string) =>
  runInDurableObject(stubOf(tenant, thread), (d: ThreadDO) => (d.lgStoredBytes() as { value: number }).value);

/** A chat graph as MessagesAnnotation users write it: the whole list is stored again every step. */
const chat = (checkpointer: BaseCheckpointSaver) =>
  new StateGraph(MessagesAnnotation)
    .addNode("answer", (s: typeof MessagesAnnotation.State) => ({ messages: [new AIMessage(`answer ${s.messages.length} ${"x".repeat(2000)}`)] }))
    .addEdge(START, "answer")
    .addEdge("answer", END)
    .compile({ checkpointer });

async function ids(saver: BaseCheckpointSaver, thread: string): Promise<string[]> {
  const out: string[] = [];
  for await (const t of saver.list({ configurable: { thread_id: thread } })) out.push(String(t.config.configurable?.checkpoint_id));
  return out;
}

describe("pruning LangGraph checkpoints", () => {
  it("keep_last: the newest N stay, the graph goes on from its head with every message, and the bytes held drop", async () => {
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const graph = chat(saver);
    const config = { configurable: { thread_id: "long-chat" } };
    for (let i = 0; i < 12; i++) await graph.invoke({ messages: [new HumanMessage(`turn ${i}`)] }, config);
    const before = await ids(saver, "long-chat");
    expect(before.length).toBe(12 * 3 + 0);
    const bytesBefore = await storedBytes(t.tenant, "long-chat");

    const pruned = await saver.prune("long-chat", { keepLast: 2 });
    expect(pruned).toEqual({ deleted: before.length - 2, kept: 2 });
    expect(await ids(saver, "long-chat")).toEqual(before.slice(0, 2));
    const bytesAfter = await storedBytes(t.tenant, "long-chat");
    expect(bytesAfter).toBeLessThan(bytesBefore / 5);

    // Resumable: the head holds the whole conversation, and the next turn appends to it.
    const out = await graph.invoke({ messages: [new HumanMessage("turn 12")] }, config);
    expect(out.messages.length).toBe(26);
    expect(out.messages[0]!.content).toBe("turn 0");
    const history = [];
    for await (const s of graph.getStateHistory(config)) history.push(s.values.messages?.length ?? 0);
    expect(history.slice(0, 3)).toEqual([26, 25, 24]);
  });

  it("before: the checkpoints older than the one named go; 404 BEM-032 for an id the thread lacks", async () => {
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const graph = chat(saver);
    const config = { configurable: { thread_id: "cut" } };
    for (let i = 0; i < 4; i++) await graph.invoke({ messages: [new HumanMessage(`turn ${i}`)] }, config);
    const all = await ids(saver, "cut");
    const from = all[4]!;
    expect(await saver.prune("cut", { before: from })).toEqual({ deleted: all.length - 5, kept: 5 });
    expect(await ids(saver, "cut")).toEqual(all.slice(0, 5));
    const res = await api("/v1/langgraph/threads/cut/prune", { key: t.adminKey, body: { before: "no-such-checkpoint" } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-032");
    const both = await api("/v1/langgraph/threads/cut/prune", { key: t.adminKey, body: { before: from, keep_last: 1 } });
    expect(both.status).toBe(400);
  });

  it("a graph paused at an interrupt, pruned to its last checkpoint, resumes as it would unpruned", async () => {
    const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const build = (checkpointer: BaseCheckpointSaver) =>
      new StateGraph(State)
        .addNode("work", () => ({ log: ["worked"] }))
        .addNode("ask", () => ({ log: [`human said ${interrupt("ok?") as string}`] }))
        .addEdge(START, "work")
        .addEdge("work", "ask")
        .addEdge("ask", END)
        .compile({ checkpointer });
    const run = async (checkpointer: BaseCheckpointSaver, prune: () => Promise<unknown>) => {
      const graph = build(checkpointer);
      const config = { configurable: { thread_id: "paused" } };
      await graph.invoke({ log: ["start"] }, config);
      await graph.invoke({ log: ["again"] }, config).catch(() => undefined);
      await prune();
      const resumed = await graph.invoke(new Command({ resume: "yes" }), config);
      return resumed.log;
    };
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const ours = await run(saver, () => saver.prune("paused", { keepLast: 1 }));
    const reference = await run(new MemorySaver(), async () => undefined);
    expect(ours).toEqual(reference);
    expect(ours.at(-1)).toBe("human said yes");
  });

  it("every namespace keeps its newest checkpoint (a subgraph's too), whatever keep_last or before say", async () => {
    const Inner = Annotation.Root({ n: Annotation<number>() });
    const inner = new StateGraph(Inner)
      .addNode("step", (s: typeof Inner.State) => ({ n: s.n + 1 }))
      .addEdge(START, "step")
      .addEdge("step", END)
      .compile();
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const graph = new StateGraph(Inner).addNode("sub", inner).addEdge(START, "sub").addEdge("sub", END).compile({ checkpointer: saver });
    const config = { configurable: { thread_id: "nested" } };
    for (let i = 0; i < 3; i++) await graph.invoke({ n: i * 10 }, config);
    const all = [];
    for await (const c of saver.list(config)) all.push(String(c.config.configurable?.checkpoint_ns));
    const root = await ids(saver, "nested");
    await saver.prune("nested", { before: root[0]! });
    const namespaces = new Set<string>();
    for await (const c of saver.list(config)) namespaces.add(String(c.config.configurable?.checkpoint_ns).split(":")[0]!);
    expect([...new Set(all.map((ns) => ns.split(":")[0]!))].sort()).toEqual([...namespaces].sort());
    const out = await graph.invoke({ n: 100 }, config);
    expect(out.n).toBe(101);
  });
});

describe("pruning a graph with a DeltaChannel", () => {
  it("the ancestors its history walk needs stay, so the channel's value survives the prune", async () => {
    const State = Annotation.Root({
      log: () => new DeltaChannel<string[], string>((state, writes) => state.concat(writes), { snapshotFrequency: 1000, initialValueFactory: () => [] }),
    });
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const graph = new StateGraph(State)
      .addNode("step", () => ({ log: "stepped" }))
      .addEdge(START, "step")
      .addEdge("step", END)
      .compile({ checkpointer: saver });
    const config = { configurable: { thread_id: "delta" } };
    for (let i = 0; i < 5; i++) await graph.invoke({ log: `in ${i}` }, config);
    const before = (await graph.getState(config)).values.log as string[];
    expect(before.length).toBe(10);
    // Pruned by a saver that never read the thread (it has seen no DeltaChannel): the server reads
    // the channels from LangGraph's counters_since_delta_snapshot metadata.
    const { deleted } = await saverFor(t.adminKey).prune("delta", { keepLast: 1 });
    expect(deleted).toBe(0); // no snapshot yet: every ancestor holds writes the walk replays
    expect((await graph.getState(config)).values.log).toEqual(before);
    const out = await graph.invoke({ log: "in 5" }, config);
    expect(out.log).toEqual([...before, "in 5", "stepped"]);
  });
});
