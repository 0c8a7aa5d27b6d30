import { Annotation, END, Send, START, StateGraph } from "@langchain/langgraph";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { jsonItems, MAX_JSON_ITEMS, MAX_LANGGRAPH_JSON_ITEMS } from "../../src/edge/limits";
import {
  jsonSize,
  MAX_JSON_ITEMS as CLIENT_MAX_JSON_ITEMS,
  MAX_LANGGRAPH_JSON_ITEMS as CLIENT_MAX_LANGGRAPH_JSON_ITEMS,
} from "../../src/langgraph-client/http";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { createTenant } from "../support/tenants";
import { BASE_URL, workerFetch } from "./support";

/**
 * The server parses at most MAX_LANGGRAPH_JSON_ITEMS (100,000) array items and object keys per
 * checkpointer request, MAX_JSON_ITEMS (10,000) per store request (400 BEM-014). The clients cut what
 * they send at that count as they cut at ops and bytes, so a step whose writes add up past it is stored
 * whole; one op past it alone is the server's BEM-014.
 */
type Sent = { path: string; items: number };
function counting(sent: Sent[]): typeof fetch {
  const inner = workerFetch();
  return (input, init) => {
    const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
    if (typeof init?.body === "string") sent.push({ path, items: jsonItems(JSON.parse(init.body)) });
    return inner(input, init);
  };
}
const meta = { source: "input" as const, step: -1, parents: {} };

describe("LangGraph clients within the server's JSON item limit", () => {
  it("the client counts items as the server does on the parsed body", () => {
    const values = [
      { a: 1, b: undefined, c: () => 1, d: [1, undefined, { e: null }], f: new Date(0), g: { h: { i: [[], {}] } } },
      [undefined, Symbol("s"), "x"],
      { ops: [{ op: "get", namespace: ["organization", "acme"], key: "k", filter: undefined }] },
    ];
    for (const v of values) expect(jsonSize(v).items).toBe(jsonItems(JSON.parse(JSON.stringify(v))));
  });

  it("a request at the client's cap passes the server's item guard, one item more is 400 BEM-014", async () => {
    const t = await createTenant();
    const routes = [
      { path: "/v1/langgraph/store/batch", cap: CLIENT_MAX_JSON_ITEMS },
      { path: "/v1/langgraph/threads/item-cap/batch", cap: CLIENT_MAX_LANGGRAPH_JSON_ITEMS },
    ];
    for (const { path, cap } of routes) {
      // {"ops": [0, …]}: one key and cap − 1 array items. Not a valid batch: past the guard, validation answers.
      const send = async (items: number) => {
        const res = await workerFetch()(`${BASE_URL}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${t.adminKey}`, "content-type": "application/json" },
          body: JSON.stringify({ ops: new Array(items - 1).fill(0) }),
        });
        return ((await res.json()) as { error: { code: string } }).error.code;
      };
      expect(await send(cap), `${path} at ${cap}`).not.toBe("BEM-014");
      expect(await send(cap + 1), `${path} at ${cap + 1}`).toBe("BEM-014");
    }
  });

  it("a fan-out step whose task writes add up past 100,000 JSON items is stored in several requests, each within it", async () => {
    const t = await createTenant();
    const sent: Sent[] = [];
    const channels = Array.from({ length: 100 }, (_, i) => `c${i}`);
    const State = Annotation.Root(
      Object.fromEntries(channels.map((c) => [c, Annotation<number[]>({ reducer: (a, b) => a.concat(b), default: () => [] })])) as Record<
        string,
        ReturnType<typeof Annotation<number[]>>
      >,
    );
    // 200 workers, each writing all 100 channels: one batch of their writes holds about 122,000 items.
    const graph = new StateGraph(State)
      .addNode("work", (s: { i: number }) => Object.fromEntries(channels.map((c) => [c, [s.i]])))
      .addConditionalEdges(START, () => Array.from({ length: 200 }, (_, i) => new Send("work", { i })))
      .addEdge("work", END)
      .compile({ checkpointer: new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: counting(sent) }) });
    const out = (await graph.invoke({}, { configurable: { thread_id: "fan-out" } })) as Record<string, number[]>;
    expect(out.c99).toHaveLength(200);
    const batches = sent.filter((s) => s.path.endsWith("/batch"));
    expect(Math.max(...batches.map((b) => b.items))).toBeLessThanOrEqual(MAX_LANGGRAPH_JSON_ITEMS);
    expect(batches.reduce((n, b) => n + b.items, 0)).toBeGreaterThan(MAX_LANGGRAPH_JSON_ITEMS);
    // Stored, not only returned: a fresh saver reads the final state.
    const state = await new StateGraph(State)
      .addNode("work", () => ({}))
      .addEdge(START, "work")
      .compile({ checkpointer: new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: workerFetch() }) })
      .getState({ configurable: { thread_id: "fan-out" } });
    expect((state.values as Record<string, number[]>).c0?.slice().sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("one putWrites past the limit on its own is the server's 400 BEM-014 and stores nothing of it; what was queued before it is stored", async () => {
    const t = await createTenant();
    const sent: Sent[] = [];
    const saver = new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: counting(sent) });
    const cp = { ...emptyCheckpoint(), id: uuid6(-1) };
    const config = await saver.put({ configurable: { thread_id: "one-big-op", checkpoint_ns: "" } }, cp, meta, {});
    // Queued together: a small task's writes, then one task's 17,000 writes (about 102,000 items).
    await saver.putWrites(config, [["a", 1]], "small-task");
    await saver.putWrites(
      config,
      Array.from({ length: 17_000 }, (_, i) => ["big", i] as [string, number]),
      "big-task",
    );
    await expect(saver.getTuple(config)).rejects.toMatchObject({ name: "EdgeweaveError", status: 400, code: "BEM-014" });
    const tuple = await saver.getTuple(config);
    expect(tuple?.pendingWrites).toEqual([["small-task", "a", 1]]);
    expect(sent.filter((s) => s.path.endsWith("/batch")).map((s) => s.items > MAX_LANGGRAPH_JSON_ITEMS)).toEqual([false, false, true]);
  });

  it("a store batch past the limit is sent in several requests, each within it, results in order", async () => {
    const t = await createTenant();
    const sent: Sent[] = [];
    const store = new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: counting(sent) });
    const value = (i: number) => Object.fromEntries(Array.from({ length: 150 }, (_, k) => [`k${k}`, i]));
    await store.batch(Array.from({ length: 100 }, (_, i) => ({ namespace: ["organization", "acme"], key: `item-${i}`, value: value(i) })));
    const got = await store.batch(Array.from({ length: 100 }, (_, i) => ({ namespace: ["organization", "acme"], key: `item-${i}` })));
    expect(got.map((item) => item?.value.k149)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(Math.max(...sent.map((s) => s.items))).toBeLessThanOrEqual(MAX_JSON_ITEMS);
  });
});
