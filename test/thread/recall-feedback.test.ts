import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TurnEmbedder } from "../../src/embed/embedder";
import { unit } from "../../src/embed/embedder";
import { ThreadStore } from "../../src/thread/thread-store";
import { unique } from "./support";

/**
 * The dense channel's query moved toward what its words found (Rocchio's pseudo-relevance feedback, src/thread/recall-vectors.ts):
 * a turn that says what the best word match says, in other words, ranks by meaning above one merely near the question's own
 * vector. The embedder is a stand-in with chosen directions, so the geometry is exact: the question along e1, its word match
 * between e1 and e2, a paraphrase of that match along e2 (nothing of the question's own direction), a distractor mostly along e3
 * with a little more of e1 than the paraphrase has; other talk along e8 (the thread's common direction, left out of every score).
 */
const DIMS = 8;
const axis = (weights: Record<number, number>) => unit(Array.from({ length: DIMS }, (_, d) => weights[d] ?? 0));
const VECTORS: Record<string, Float32Array> = {
  "where is the lighthouse": axis({ 0: 1 }),
  "The lighthouse keeper logs every passing ship.": axis({ 0: 0.6, 1: 0.8 }),
  "Each vessel that sails by goes into his book.": axis({ 1: 1 }),
  "Mountain trails were muddy after the storm.": axis({ 0: 0.3, 2: 0.95 }),
};
const stand: TurnEmbedder = { id: "stand-in-directions", dims: DIMS, embed: (text) => VECTORS[text] ?? axis({ 7: 1 }) };

describe("recall by meaning with feedback from the words", () => {
  it("the best word match's paraphrase ranks by meaning above a turn only nearer the question's own vector", async () => {
    const stub = env.THREADS.get(env.THREADS.idFromName(unique("feedback")));
    await runInDurableObject(stub, async (_live, state) => {
      await state.storage.deleteAll();
      const store = ThreadStore.of(state.storage, { embedder: stand });
      const planted = Object.keys(VECTORS).slice(1);
      const messages = Array.from({ length: 120 }, (_, i) => ({
        id: i < planted.length ? `p${i}` : `o${i}`,
        role: i % 2 ? ("assistant" as const) : ("user" as const),
        content: i < planted.length ? planted[i]! : `Routine note ${i} about invoices and meetings.`,
      }));
      store.update({ ops: [{ op: "append", messages }] }, "update");
      const recalled = store.recent(400, { recall: { query: "where is the lighthouse", share: 0.75, neighbours: 0 } }).recalled ?? [];
      const dense = new Map(recalled.map((t) => [t.message.id, t.channels?.dense?.rank]));
      // p0 is the word match (and the closest in meaning); p1 its paraphrase; p2 the distractor.
      expect(recalled.find((t) => t.message.id === "p0")?.channels?.full_text).toBeDefined();
      expect(dense.get("p1")).toBeDefined();
      expect(dense.get("p1")!).toBeLessThan(dense.get("p2") ?? Number.MAX_SAFE_INTEGER);
    });
  });
});
