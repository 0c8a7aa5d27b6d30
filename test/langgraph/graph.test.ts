import { Annotation, Command, END, interrupt, MemorySaver, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { InMemoryStore, type BaseCheckpointSaver, type BaseStore } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { createTenant } from "../support/tenants";
import { BASE_URL, freshMember, saverFor, workerFetch } from "./support";

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  topic: Annotation<string>(),
  approved: Annotation<boolean>(),
  findings: Annotation<string[]>(),
});
const Research = Annotation.Root({ topic: Annotation<string>(), findings: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });

/** draft → research (a subgraph: its own namespace) → approve (interrupts for a human) → remember (writes the store). */
function buildGraph(checkpointer: BaseCheckpointSaver, store: BaseStore) {
  const research = new StateGraph(Research)
    .addNode("search", (s: typeof Research.State) => ({ findings: [`searched ${s.topic}`] }))
    .addNode("summarize", () => ({ findings: ["summarized"] }))
    .addEdge(START, "search")
    .addEdge("search", "summarize")
    .addEdge("summarize", END)
    .compile();
  return new StateGraph(State)
    .addNode("draft", (s: typeof State.State) => ({ log: [`draft about ${s.topic}`] }))
    .addNode("research", research)
    .addNode("approve", () => {
      const answer = interrupt({ question: "publish?" }) as string;
      return { approved: answer === "yes", log: [`human said ${answer}`] };
    })
    .addNode("remember", async (s: typeof State.State, config: LangGraphRunnableConfig) => {
      await config.store?.put(["organization", "acme"], `note-${s.topic}`, { topic: s.topic, approved: s.approved });
      const seen = await config.store?.search(["organization", "acme"]);
      return { log: [`remembered (${seen?.length ?? 0} notes)`] };
    })
    .addEdge(START, "draft")
    .addEdge("draft", "research")
    .addEdge("research", "approve")
    .addEdge("approve", "remember")
    .addEdge("remember", END)
    .compile({ checkpointer, store });
}

/** The same scenario, returned as plain data so two backends can be compared. */
async function scenario(checkpointer: BaseCheckpointSaver, store: BaseStore) {
  const graph = buildGraph(checkpointer, store);
  const config = { configurable: { thread_id: "g-1" } };
  const first = await graph.invoke({ topic: "edges" }, config);
  const paused = await graph.getState(config);
  const resumed = await graph.invoke(new Command({ resume: "yes" }), config);
  const history = [];
  for await (const s of graph.getStateHistory(config)) history.push({ step: s.metadata?.step, source: s.metadata?.source, next: s.next, log: s.values.log });
  // Fork: from the checkpoint paused before "approve", change the topic and resume with "no".
  const before = history.find((h) => h.next.includes("approve"));
  const pausedSnap = [];
  for await (const s of graph.getStateHistory(config)) if (s.next.includes("approve")) pausedSnap.push(s);
  const forkConfig = await graph.updateState(pausedSnap[0]!.config, { topic: "forks" });
  const forked = await graph.invoke(new Command({ resume: "no" }), forkConfig);
  const subgraphNamespaces = new Set<string>();
  for await (const t of checkpointer.list({ configurable: { thread_id: "g-1" } }))
    subgraphNamespaces.add(String(t.config.configurable?.checkpoint_ns).split(":")[0]!);
  const head = await graph.getState(config);
  return {
    firstInterrupt: (first as { __interrupt__?: { value: unknown }[] }).__interrupt__?.[0]?.value,
    pausedNext: paused.next,
    resumed: { log: resumed.log, approved: resumed.approved, findings: resumed.findings },
    historyShape: history.map((h) => [h.step, h.source, h.next]),
    beforeApproveLog: before?.log,
    forked: { log: forked.log, approved: forked.approved, topic: forked.topic },
    headTopic: head.values.topic,
    namespaces: [...subgraphNamespaces].sort(),
    notes: (await store.search(["organization", "acme"])).map((i) => [i.key, i.value]).sort(),
  };
}

describe("a real StateGraph on EdgeweaveSaver + EdgeweaveStore", () => {
  it("interrupt / resume, getStateHistory, fork via updateState, a subgraph namespace, the store: same as MemorySaver + InMemoryStore", async () => {
    const t = await createTenant();
    const ours = await scenario(saverFor(t.adminKey), new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: workerFetch() }));
    const reference = await scenario(new MemorySaver(), new InMemoryStore());
    expect(ours).toEqual(reference);
    // And the scenario really did what it says.
    expect(ours.firstInterrupt).toEqual({ question: "publish?" });
    expect(ours.pausedNext).toEqual(["approve"]);
    expect(ours.resumed).toEqual({
      log: ["draft about edges", "human said yes", "remembered (1 notes)"],
      approved: true,
      findings: ["searched edges", "summarized"],
    });
    expect(ours.forked).toEqual({ log: ["draft about edges", "human said no", "remembered (2 notes)"], approved: false, topic: "forks" });
    expect(ours.headTopic).toBe("forks");
    expect(ours.namespaces).toEqual(["", "research"]);
    expect(ours.notes).toEqual([
      ["note-edges", { topic: "edges", approved: true }],
      ["note-forks", { topic: "forks", approved: false }],
    ]);
  });

  it("the same with a member key (thread reach and organization:acme, no rewrite_thread): a graph's own use is runs", async () => {
    const { key } = await freshMember();
    const ours = await scenario(saverFor(key), new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch() }));
    expect(ours).toEqual(await scenario(new MemorySaver(), new InMemoryStore()));
  });
});
