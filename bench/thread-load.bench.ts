import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { ThreadDO } from "../src/object/thread-object";
import { ThreadStore } from "../src/thread/thread-store";
import { median, report, seedMessages, logOf, stubFor } from "./thread-support";

/**
 * Time to load the newest 4k-token window from a thread of 100 vs 100,000
 * messages. Goal: ratio <= 1.1 (loading reads only what it returns). Cold: a store
 * just opened over the thread's SQLite (a restarted object, or its first turn) reads
 * and decodes the rows; warm: the object's own store answers from its tail cache.
 */
const BUDGET = 4000;
const CALLS_PER_SAMPLE = 200;
const SAMPLES = 61;

/** One sample: mean ms per call over CALLS_PER_SAMPLE calls, cold (a fresh store each call) and warm (the object's). */
function sample(instance: ThreadDO, storage: DurableObjectStorage): { cold: number; warm: number; returned: number } {
  let returned = 0;
  const t0 = performance.now();
  for (let i = 0; i < CALLS_PER_SAMPLE; i++) returned = ThreadStore.of(storage).recent(BUDGET).messages.length;
  const t1 = performance.now();
  for (let i = 0; i < CALLS_PER_SAMPLE; i++) {
    const r = instance.loadRecent(BUDGET);
    if (!r.ok) throw new Error(r.error.message);
    if (r.value.messages.length !== returned) throw new Error("the cached window differs from the stored one");
  }
  return { cold: (t1 - t0) / CALLS_PER_SAMPLE, warm: (performance.now() - t1) / CALLS_PER_SAMPLE, returned };
}

it("loadRecent(4000 tokens): 100 vs 100,000 messages", async () => {
  const sizes = [100, 100_000] as const;
  const stubs = sizes.map((n) => stubFor(`load-${n}`));
  for (const [i, n] of sizes.entries()) await runInDurableObject(stubs[i]!, (_instance: ThreadDO, state) => seedMessages(logOf(state.storage), n));
  // Samples alternate between the two threads so machine load hits both alike.
  const ms: number[][] = [[], []];
  const warm: number[][] = [[], []];
  const returned: number[] = [0, 0];
  const rowsRead: number[] = [0, 0];
  for (let s = -3; s < SAMPLES; s++) {
    for (const i of s % 2 ? [0, 1] : [1, 0]) {
      await runInDurableObject(stubs[i]!, (instance: ThreadDO, state) => {
        const r = sample(instance, state.storage);
        if (s >= 0) {
          ms[i]!.push(r.cold); // the first rounds warm SQLite's page cache
          warm[i]!.push(r.warm);
        }
        returned[i] = r.returned;
        const store = ThreadStore.of(state.storage); // the object's own store is private: count one load through another over the same SQLite
        store.recent(BUDGET);
        rowsRead[i] = store.lastScanRows;
      });
    }
  }
  expect(returned[1]).toBe(returned[0]); // same window either way
  const [small, large] = [median(ms[0]!), median(ms[1]!)];
  report("thread-load-recent", {
    window_messages: returned[0]!,
    rows_read_at_100: rowsRead[0]!,
    rows_read_at_100000: rowsRead[1]!,
    median_ms_at_100: +small.toFixed(4),
    median_ms_at_100000: +large.toFixed(4),
    ratio: +(large / small).toFixed(3),
    min_ms_at_100: +Math.min(...ms[0]!).toFixed(4),
    min_ms_at_100000: +Math.min(...ms[1]!).toFixed(4),
    warm_median_ms_at_100: +median(warm[0]!).toFixed(4),
    warm_median_ms_at_100000: +median(warm[1]!).toFixed(4),
    goal: "<= 1.1",
  });
});
