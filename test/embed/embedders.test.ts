import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { MessageInput } from "../../src/core/message";
import { EMBEDDED_TURNS, loadWordTable } from "../../src/embed/embedded";
import { EmbedFailure } from "../../src/embed/embedder";
import { embedderNamed } from "../../src/embed/embedders";
import { aiBinding } from "../../src/embed/workers-ai";
import { embedderOf, embedForRun, embedMissing, embedRecallQuery } from "../../src/pipeline/run-embed";
import { TurnIO } from "../../src/pipeline/turn-io";
import type { UsageRecord } from "../../src/pipeline/usage";
import { requireAgent } from "../../src/routing/bundled";
import { ThreadStore } from "../../src/thread/thread-store";
import { unique } from "../thread/support";
import { BGE_DIMS, bagOfWords, deployed, fakeAi } from "../support/fake-ai";
import { clearUpstream, mockUpstream, upstreamRequests } from "../support/upstream";

/**
 * Embedders beyond the embedded table (docs/concepts/recall-by-meaning.md): Workers AI through the `AI` binding (faked
 * here as the binding answers `run` for @cf/baai/bge-small-en-v1.5: `{ shape, data }`) and any
 * OpenAI-compatible `/v1/embeddings` (the fake upstream). Their failures — an error, no answer in
 * time, vectors of the wrong length — leave a turn on full-text recall with a warning, write nothing
 * half-way, and the missing vectors are filled by a later run.
 */

const TARGET = "The lighthouse keeper repaints the red stripes every spring.";
function thread(): MessageInput[] {
  return Array.from({ length: 150 }, (_, i) => ({
    id: `m${i}`,
    role: i % 2 ? "assistant" : "user",
    content: i === 20 ? TARGET : `Routine note ${i} about invoices, meetings and the quarterly budget.`,
  }));
}

async function withStore<T>(fn: (store: ThreadStore, sql: SqlStorage) => Promise<T>): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique("embedders")));
  return runInDurableObject(stub, async (_live, state) => {
    await state.storage.deleteAll();
    const store = ThreadStore.of(state.storage, { embedder: EMBEDDED_TURNS });
    store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
    return fn(store, state.storage.sql);
  });
}

const byMeaning = (store: ThreadStore, query: string) =>
  (store.recent(300, { recall: { query, share: 0.75, neighbours: 0, channels: ["dense"] } }).recalled ?? []).map((t) => t.message.id);
const vectorRows = (sql: SqlStorage) =>
  sql
    .exec<{ n: number; made: number; by: string }>(
      "SELECT count(*) AS n, count(vec) AS made, (SELECT embedder FROM recall_vectors_by) AS by FROM recall_vectors",
    )
    .one();

afterEach(() => clearUpstream());

describe("the embedders models.yaml names", () => {
  it("the config the tests and `npm start` use has no AI binding (it lives in a deploy environment only)", () => {
    expect(aiBinding(env)).toBeUndefined();
  });

  it("Workers AI: the binding's run is called with the model and the texts; vectors come back unit length, blank texts as zeros without a call", async () => {
    const ai = fakeAi();
    const bge = embedderOf(deployed(ai), "bge-small").remote!;
    expect(bge.id).toBe("workers-ai:@cf/baai/bge-small-en-v1.5:384");
    await bge.load(["Hello there, lighthouse.", "  "]);
    expect(ai.calls).toEqual([{ model: "@cf/baai/bge-small-en-v1.5", text: ["Hello there, lighthouse."] }]);
    expect(Math.hypot(...bge.embed("Hello there, lighthouse.")!)).toBeCloseTo(1, 5);
    expect([...bge.embed("  ")!].every((x) => x === 0)).toBe(true);
    // Held: the same text again costs no call.
    expect(await bge.load(["Hello there, lighthouse."])).toBe(0);
    expect(ai.calls).toHaveLength(1);
    // 100 KB of text is one bounded request; emoji and another script are text like any other.
    await bge.load(["word ".repeat(20_000), "🎉🙂👍", "東京に行きました"]);
    expect(ai.calls[1]!.text.map((t) => t.length)).toEqual([8192, 6, 8]);
  });

  it("an OpenAI-compatible /v1/embeddings: the key from its secret, answers put back in input order, the tokens it reports billed", async () => {
    mockUpstream("https://api.openai.com", async (req) => {
      const body = (await req.json()) as { model: string; input: string[] };
      // Out of order on purpose: the index says which input each vector is.
      const data = body.input.map((t, index) => ({ object: "embedding", index, embedding: bagOfWords(t, 1536) })).reverse();
      return Response.json({ object: "list", data, model: body.model, usage: { prompt_tokens: 17, total_tokens: 17 } });
    });
    const small = embedderOf({ OPENAI_API_KEY: "sk-test-embed" }, "openai-small").remote!;
    expect(await small.load(["first text about boats", "second text about trains"])).toBe(17);
    const [sent] = upstreamRequests();
    expect(sent!.url).toBe("https://api.openai.com/v1/embeddings");
    expect(sent!.headers.authorization).toBe("Bearer sk-test-embed");
    expect(JSON.parse(sent!.body)).toEqual({
      model: "text-embedding-3-small",
      input: ["first text about boats", "second text about trains"],
      encoding_format: "float",
    });
    const boats = small.embed("first text about boats")!;
    const expected = bagOfWords("first text about boats", 1536);
    const norm = Math.hypot(...expected);
    expect([...boats].map((x) => Math.round(x * 1e4))).toEqual(expected.map((x) => Math.round((x / norm) * 1e4)));
  });

  it("each failure is an EmbedFailure naming its reason: an error, no answer in time, the wrong length, no binding, no key", async () => {
    const reason = (p: Promise<unknown>) =>
      p.then(
        () => "ok",
        (e: unknown) => (e instanceof EmbedFailure ? e.reason : `not an EmbedFailure: ${String(e)}`),
      );
    expect(await reason(embedderOf(deployed(fakeAi("error")), "bge-small").remote!.load(["a"]))).toBe("failed");
    expect(await reason(embedderOf(deployed(fakeAi("short")), "bge-small").remote!.load(["a"]))).toBe("dimension");
    expect(await reason(embedderOf({}, "bge-small").remote!.load(["a"]))).toBe("unavailable");
    expect(await reason(embedderOf({}, "openai-small").remote!.load(["a"]))).toBe("unavailable");
    mockUpstream("https://api.openai.com", () => Response.json({ error: { message: "overloaded" } }, { status: 503 }));
    expect(await reason(embedderOf({ OPENAI_API_KEY: "k" }, "openai-small").remote!.load(["a"]))).toBe("failed");
    // The endpoint answering vectors of another length, or not an embeddings list.
    mockUpstream("https://api.openai.com", () => Response.json({ data: [{ index: 0, embedding: [0.1, 0.2, 0.3] }] }));
    expect(await reason(embedderOf({ OPENAI_API_KEY: "k" }, "openai-small").remote!.load(["b"]))).toBe("dimension");
    mockUpstream("https://api.openai.com", () => Response.json({ answer: "no" }));
    expect(await reason(embedderOf({ OPENAI_API_KEY: "k" }, "openai-small").remote!.load(["c"]))).toBe("failed");
    // bge-small's timeout is the default 3 s: a binding that never answers fails then, not never.
    const started = Date.now();
    expect(await reason(embedderOf(deployed(fakeAi("hang")), "bge-small").remote!.load(["a"]))).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(6000);
  });
});

describe("a remote embedder in a thread", () => {
  it("its vectors are made after the answer in bounded batches, billed, recorded as its own; recall by meaning then finds the turn", async () => {
    await withStore(async (store, sql) => {
      await loadWordTable(env.ASSETS);
      // The embedded default's vectors first (a recall fills them).
      expect(byMeaning(store, "lighthouse stripes")).toContain("m20");
      expect(vectorRows(sql)).toMatchObject({ n: 150, made: 150, by: EMBEDDED_TURNS.id });
      const ai = fakeAi();
      const bge = embedderOf(deployed(ai), "bge-small");
      store.vectors.use(bge.turns);
      await bge.remote!.load(["lighthouse stripes"]);
      // Until its background work switched the thread, recall by meaning compares nothing: never the other embedder's vectors.
      expect(byMeaning(store, "lighthouse stripes")).toEqual([]);
      const bills: UsageRecord[] = [];
      expect(await embedMissing(store, (u) => bills.push(u), undefined, 64, 1)).toBe(64);
      expect(vectorRows(sql)).toEqual({ n: 150, made: 64, by: bge.turns.id });
      expect(await embedMissing(store, (u) => bills.push(u), undefined, 64, 4)).toBe(86);
      expect(vectorRows(sql)).toEqual({ n: 150, made: 150, by: bge.turns.id });
      expect(sql.exec<{ len: number }>("SELECT DISTINCT length(vec) AS len FROM recall_vectors").toArray()).toEqual([{ len: BGE_DIMS }]);
      // Two calls of 64 and one of 22 (the query was held already), each billed under the embedder's name.
      expect(ai.calls.map((c) => c.text.length)).toEqual([1, 64, 64, 22]);
      expect(bills.map((b) => [b.model, b.cause])).toEqual([
        ["bge-small", "embedding"],
        ["bge-small", "embedding"],
        ["bge-small", "embedding"],
      ]);
      // In whole micro-USD, as a model call's cost (a budget settles to exactly this).
      expect(bills.every((b) => b.prompt_tokens > 0 && b.cost === Math.round(b.prompt_tokens * 0.00002 * 1000) / 1_000_000)).toBe(true);
      expect(byMeaning(store, "lighthouse stripes")).toContain("m20");
    });
  });

  it("two embedders of the same length: the thread's vectors of one are never compared with the other's query; changing re-embeds them all", async () => {
    await withStore(async (store, sql) => {
      const bge = embedderOf(deployed(fakeAi()), "bge-small");
      store.vectors.use(bge.turns);
      // As after a run's answer: the new messages join the index, then get their vectors.
      store.settleRecallIndex();
      await embedMissing(store, () => undefined, undefined, 64, 4);
      expect(vectorRows(sql)).toEqual({ n: 150, made: 150, by: bge.turns.id });
      // Another model answering 384 numbers too (a different one: its own id).
      const other = { name: "other", provider: "workers-ai" as const, model: "@cf/other/model", dims: BGE_DIMS, cost_per_1k_tokens: 0, timeout_ms: 3000 };
      const swapped = embedderNamed(deployed(fakeAi()), "other", [other]);
      store.vectors.use(swapped.turns);
      await swapped.remote!.load(["lighthouse stripes"]);
      expect(byMeaning(store, "lighthouse stripes")).toEqual([]);
      expect(await embedMissing(store, () => undefined, undefined, 64, 4)).toBe(150);
      expect(vectorRows(sql)).toEqual({ n: 150, made: 150, by: swapped.turns.id });
      expect(byMeaning(store, "lighthouse stripes")).toContain("m20");
    });
  });

  it("a recall outside a run (POST /v1/memory/context) fetches the query's vector, billed; a failure ranks by words, throws nothing and answers the warning", async () => {
    await withStore(async (store) => {
      const ai = fakeAi();
      const bge = embedderOf(deployed(ai), "bge-small");
      store.vectors.use(bge.turns);
      store.settleRecallIndex();
      await embedMissing(store, () => undefined, undefined, 64, 4);
      const ask = { query: "who repaints the lighthouse stripes", share: 0.75, neighbours: 0 };
      const bills: UsageRecord[] = [];
      // Words only: nothing to fetch.
      await embedRecallQuery(store, { ...ask, channels: ["full_text"] }, (u) => bills.push(u));
      expect(bills).toEqual([]);
      expect(await embedRecallQuery(store, ask, (u) => bills.push(u))).toBeUndefined();
      expect(bills.map((b) => [b.model, b.cause, b.prompt_tokens > 0])).toEqual([["bge-small", "embedding", true]]);
      expect(ai.calls.at(-1)!.text).toEqual([ask.query]);
      expect(byMeaning(store, ask.query)).toContain("m20");

      const failing = embedderOf(deployed(fakeAi("error")), "bge-small");
      store.vectors.use(failing.turns);
      const other = { ...ask, query: "lighthouse paint in spring" };
      expect(await embedRecallQuery(store, other, () => expect.unreachable("a failed call bills nothing"))).toBe(
        "recall by meaning was off for this turn (embedder bge-small: failed); it ran on full-text search",
      );
      const recalled = store.recent(300, { recall: other }).recalled ?? [];
      expect(recalled.map((t) => t.message.id)).toContain("m20");
      expect(recalled.every((t) => t.channels?.dense === undefined)).toBe(true);
    });
  });

  it("no AI binding, or no key for an OpenAI-compatible one: the turn ranks by words and says so", async () => {
    const asked = { query: "lighthouse stripes", recallQuery: "lighthouse stripes", recall: { share: 0.75, neighbours: 1 } };
    const io = new TurnIO(env.DB, undefined);
    await withStore(async (store) => {
      for (const embedder of ["bge-small", "openai-small"]) {
        const agent = { ...requireAgent("assistant"), embedder };
        // A fresh env each time (embedders are kept per env): neither the AI binding nor OPENAI_API_KEY in it.
        const { rank, warning } = await embedForRun({ env: {}, io, thread: { log: store } }, { tenant: "t", agent, rank: asked, facts: true });
        expect(warning).toBe(`recall by meaning was off for this turn (embedder ${embedder}: unavailable); it ran on full-text search`);
        expect(rank.channels).toEqual(["full_text"]);
        expect(
          store
            .recent(300, { recall: { query: "lighthouse stripes", share: 0.75, neighbours: 0, channels: rank.channels } })
            .recalled?.map((t) => t.message.id),
        ).toContain("m20");
      }
    });
  });

  it("an embedder that fails, times out or answers the wrong length: the turn ranks by words and says so; nothing half-written; a later run fills the vectors", async () => {
    const agent = { ...requireAgent("assistant"), embedder: "bge-small" };
    const asked = { query: "lighthouse stripes", recallQuery: "lighthouse stripes", recall: { share: 0.75, neighbours: 1 } };
    const io = new TurnIO(env.DB, undefined);
    await withStore(async (store) => {
      for (const [behave, said] of [
        ["error", "failed"],
        ["hang", "timeout"],
        ["short", "wrong vector length"],
      ] as const) {
        const { rank, warning } = await embedForRun(
          { env: deployed(fakeAi(behave)), io, thread: { log: store } },
          { tenant: "t", agent, rank: asked, facts: true },
        );
        expect(warning).toBe(`recall by meaning was off for this turn (embedder bge-small: ${said}); it ran on full-text search`);
        expect(rank.channels).toEqual(["full_text"]);
        expect(rank.recall).toEqual({ share: 0.75, neighbours: 1, channels: ["full_text"] });
      }
      // A working one: nothing to say, the channels as asked, the thread's turns on the agent's embedder.
      const working = embedderOf(deployed(fakeAi()), "bge-small");
      const run = await embedForRun({ env: deployed(fakeAi()), io, thread: { log: store } }, { tenant: "t", agent, rank: asked, facts: true });
      expect(run).toEqual({ rank: asked });
      expect(store.vectors.embedderInUse()?.id).toBe(working.turns.id);
      // Without the agent's own, the file's: the built-in one, which fetches nothing.
      expect(
        await embedForRun({ env: deployed(fakeAi("error")), io, thread: { log: store } }, { tenant: "t", agent: undefined, rank: asked, facts: true }),
      ).toEqual({ rank: asked });
      expect(store.vectors.embedderInUse()).toBe(EMBEDDED_TURNS);
    });

    await withStore(async (store, sql) => {
      const failing = embedderOf(deployed(fakeAi("short")), "bge-small");
      store.vectors.use(failing.turns);
      // The words still recall the turn.
      const words = store.recent(300, { recall: { query: "lighthouse stripes", share: 0.75, neighbours: 0, channels: ["full_text"] } });
      expect(words.recalled?.map((t) => t.message.id)).toContain("m20");
      const before = vectorRows(sql);
      expect(await embedMissing(store, () => expect.unreachable("a failed call bills nothing"))).toBe(0);
      expect(vectorRows(sql)).toEqual(before);
      // A later run, the endpoint answering again: the missing vectors are filled.
      const working = embedderOf(deployed(fakeAi()), "bge-small");
      store.vectors.use(working.turns);
      expect(await embedMissing(store, () => undefined, undefined, 64, 4)).toBe(150);
      expect(vectorRows(sql)).toEqual({ n: 150, made: 150, by: working.turns.id });
    });
  });
});
