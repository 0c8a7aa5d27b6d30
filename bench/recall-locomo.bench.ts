import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { ThreadDO } from "../src/object/thread-object";
import { indexWaiting } from "../src/thread/recall-index";
import { ThreadStore } from "../src/thread/thread-store";
import { logOf, median, mustUpdate, report, stubFor } from "./thread-support";

/**
 * Recall inside the object over a 20,000-message thread of LoCoMo turns (the five conversations
 * repeated), asked LoCoMo's questions: p50 of the thread log's recall read (2,000-token budget,
 * share 0.75, one neighbour) beside the plain newest-window read in the same run; and the
 * stored bytes per turn with the recall index and without it (its table and triggers dropped
 * before seeding), and what appending costs either way.
 */
type Turn = { role: "user" | "assistant"; content: string; created_at: number };
const convs = JSON.parse((env as unknown as { LOCOMO: string }).LOCOMO) as { turns: Turn[]; questions: string[] }[];
const N = 20_000;
const BUDGET = 2000;
const ask = (query: string) => ({ query, share: 0.75, neighbours: 1 });

function turns(n: number): Turn[] {
  const all = convs.flatMap((c) => c.turns);
  return Array.from({ length: n }, (_, i) => all[i % all.length]!);
}

function seed(storage: DurableObjectStorage, list: Turn[]): number {
  const log = logOf(storage);
  const t0 = performance.now();
  for (let i = 0; i < list.length; i += 1000) mustUpdate(log, { ops: [{ op: "append", messages: list.slice(i, i + 1000) }] });
  return performance.now() - t0;
}

it("recall over 20,000 LoCoMo turns; bytes per stored turn with and without the index", async () => {
  const questions = convs.flatMap((c) => c.questions);
  const list = turns(N);
  const indexed = stubFor("recall-20k");
  const bare = stubFor("recall-20k-bare");
  // New messages wait for the index (recall-index.ts, v10): they join it here, as the first recall would make them, inside the timing.
  const seededMs = await runInDurableObject(indexed, (_instance: ThreadDO, state) => {
    const t0 = performance.now();
    seed(state.storage, list);
    state.storage.transactionSync(() => indexWaiting(state.storage.sql));
    return performance.now() - t0;
  });
  const bareMs = await runInDurableObject(bare, (instance: ThreadDO, state) => {
    instance.loadRecent(1); // the object migrates on first use
    for (const t of ["messages_recall_insert", "messages_recall_delete", "messages_recall_update"]) state.storage.sql.exec(`DROP TRIGGER ${t}`);
    state.storage.sql.exec("DROP TABLE recall_fts");
    return seed(state.storage, list);
  });
  const size = async (stub: typeof indexed): Promise<number> => runInDurableObject(stub, (_i: ThreadDO, state) => state.storage.sql.databaseSize);
  const [withIndex, without] = [await size(indexed), await size(bare)];

  const recallMs: number[] = [];
  const windowMs: number[] = [];
  let recalled = 0;
  await runInDurableObject(indexed, (_i: ThreadDO, state) => {
    const store = ThreadStore.of(state.storage);
    store.recent(BUDGET);
    for (const [k, q] of questions.entries()) {
      const t0 = performance.now();
      const r = store.recent(BUDGET, { recall: ask(q) });
      const t1 = performance.now();
      store.recent(BUDGET);
      const t2 = performance.now();
      if (k >= 20) {
        recallMs.push(t1 - t0);
        windowMs.push(t2 - t1);
      }
      recalled += r.recalled?.length ?? 0;
    }
  });
  expect(recalled).toBeGreaterThan(0);
  report("thread-recall-locomo", {
    messages: N,
    questions: recallMs.length,
    recall_p50_ms: Number(median(recallMs).toFixed(3)),
    recall_p90_ms: Number([...recallMs].sort((a, b) => a - b)[Math.floor(recallMs.length * 0.9)]!.toFixed(3)),
    newest_window_p50_ms: Number(median(windowMs).toFixed(3)),
    mean_recalled_turns: Number((recalled / questions.length).toFixed(1)),
    bytes_per_turn_with_index: Math.round(withIndex / N),
    bytes_per_turn_without: Math.round(without / N),
    bytes_ratio: Number((withIndex / without).toFixed(3)),
    append_ms_per_1000_with_index: Number(((seededMs / N) * 1000).toFixed(1)),
    append_ms_per_1000_without: Number(((bareMs / N) * 1000).toFixed(1)),
  });
});
