import { env } from "cloudflare:workers";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, MemorySaver, MessagesAnnotation, MessagesDeltaValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { it } from "vitest";
import { threadObjectName } from "../src/thread/thread-id";
import type { RpcResult } from "../src/core/wire-error";
import { saverFor } from "../test/langgraph/support";
import { createTenant } from "../test/support/tenants";
import { report } from "./thread-support";

/**
 * A 100-turn chat graph (one "reply" node appending to `messages`) on EdgeweaveSaver,
 * with LangGraph's default MessagesAnnotation and with the delta channel
 * (MessagesDeltaValue), against the same graphs on MemorySaver in the same run.
 * Per turn: HTTP calls of one invoke, and bytes the saver stored for it.
 * Goals: calls per invoke <= 3; with the delta channel, bytes per turn flat
 * (median of turns 91-100 vs turns 6-15: ratio <= 1.1).
 */
const TURNS = 100;
const text = (i: number, who: string) => `${who} message ${i}: ${"lorem ipsum dolor sit amet ".repeat(6)}`;

const DeltaState = new StateSchema({ messages: MessagesDeltaValue });
const reply = (s: { messages: unknown[] }) => ({ messages: [new AIMessage(text(s.messages.length, "assistant"))] });
const graphs = {
  messages: (cp: BaseCheckpointSaver) =>
    new StateGraph(MessagesAnnotation).addNode("reply", reply).addEdge(START, "reply").addEdge("reply", END).compile({ checkpointer: cp }),
  delta: (cp: BaseCheckpointSaver) =>
    new StateGraph(DeltaState).addNode("reply", reply).addEdge(START, "reply").addEdge("reply", END).compile({ checkpointer: cp }),
};

/** Bytes a MemorySaver holds (its serialized checkpoints, metadata and writes). */
function memoryBytes(saver: MemorySaver): number {
  let n = 0;
  const walk = (v: unknown): void => {
    if (v instanceof Uint8Array) n += v.byteLength;
    else if (typeof v === "string") n += v.length;
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(saver.storage);
  walk(saver.writes);
  return n;
}

type Run = { calls: number[]; bytes: number[] };

async function run(kind: keyof typeof graphs, backend: "edgeweave" | "memory"): Promise<Run> {
  const counter = { calls: 0 };
  const t = await createTenant();
  const threadId = `bench-${kind}`;
  const saver = backend === "edgeweave" ? saverFor(t.adminKey, counter) : new MemorySaver();
  const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, threadId)));
  const stored = async () => (saver instanceof MemorySaver ? memoryBytes(saver) : ((await stub.lgStoredBytes()) as RpcResult<number> & { ok: true }).value);
  const graph = graphs[kind](saver);
  const out: Run = { calls: [], bytes: [] };
  let before = await stored();
  for (let i = 0; i < TURNS; i++) {
    counter.calls = 0;
    await graph.invoke({ messages: [new HumanMessage(text(i, "user"))] }, { configurable: { thread_id: threadId } });
    const now = await stored();
    out.calls.push(counter.calls);
    out.bytes.push(now - before);
    before = now;
  }
  return out;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it("LangGraph: HTTP calls and stored bytes per turn, 100 turns", async () => {
  for (const kind of ["messages", "delta"] as const) {
    const ours = await run(kind, "edgeweave");
    const memory = await run(kind, "memory");
    // Medians over ten turns: a DeltaSnapshot (every 100 updates) lands in one turn of a window.
    const early = median(ours.bytes.slice(5, 15));
    const late = median(ours.bytes.slice(90, 100));
    report(`langgraph-${kind}`, {
      turns: TURNS,
      calls_per_invoke_median: median(ours.calls),
      calls_per_invoke_max: Math.max(...ours.calls),
      calls_total: ours.calls.reduce((a, b) => a + b, 0),
      bytes_per_turn_turns_6_15: Math.round(early),
      bytes_per_turn_turns_91_100: Math.round(late),
      ratio_late_vs_early: +(late / early).toFixed(3),
      stored_total_bytes: ours.bytes.reduce((a, b) => a + b, 0),
      mean_bytes_per_turn_turns_91_100: Math.round(mean(ours.bytes.slice(90, 100))),
      memorysaver_bytes_per_turn_turns_6_15: Math.round(median(memory.bytes.slice(5, 15))),
      memorysaver_bytes_per_turn_turns_91_100: Math.round(median(memory.bytes.slice(90, 100))),
      memorysaver_total_bytes: memory.bytes.reduce((a, b) => a + b, 0),
      goals: "calls per invoke <= 3; delta: ratio <= 1.1",
    });
  }
});
