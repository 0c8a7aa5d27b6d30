import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { ThreadStore } from "../src/thread/thread-store";
import type { ThreadDO } from "../src/object/thread-object";
import { line, logOf, median, report, seedMessages, stubFor } from "./thread-support";

/**
 * Resent-history reconciliation of a 1,000-message resend (the thread's last 1,000 messages
 * plus one new) on a 100,000-message thread, against the same resend on a 1,000-message
 * thread, all of it inside the thread's object. Warm (the object read its window for the
 * previous turn): compared with the tail cache by canonical text, no rows read, nothing
 * hashed. Cold (a store just opened): the sent messages hashed and ≤ 2 × 1,000 rows read.
 * Goal: ≤ 1 ms added, and the same at both sizes.
 */
const SAMPLES = 41;
const CALLS_PER_SAMPLE = 10;

it("reconcile a 1,000-message resend: 1,000 vs 100,000-message thread", async () => {
  const sizes = [1_000, 100_000] as const;
  const stubs = sizes.map((n) => stubFor(`reconcile-${n}`));
  for (const [i, n] of sizes.entries()) await runInDurableObject(stubs[i]!, (_instance: ThreadDO, state) => seedMessages(logOf(state.storage), n));
  const resendFor = (n: number) => [
    ...Array.from({ length: 1000 }, (_, j) => ({ role: (n - 1000 + j) % 2 ? ("assistant" as const) : ("user" as const), content: line(n - 1000 + j) })),
    { role: "user" as const, content: "and one new question" },
  ];
  const resends = sizes.map(resendFor);
  // warm: the object read its window before, as the previous turn did (a 100k-token model budget);
  // cold: a store just opened over the same storage (a restarted object): stored hashes, rows read.
  const ms = { warm: [[], []] as number[][], cold: [[], []] as number[][] };
  for (let s = -3; s < SAMPLES; s++) {
    for (const i of s % 2 ? [0, 1] : [1, 0]) {
      await runInDurableObject(stubs[i]!, (instance: ThreadDO, state) => {
        const window = instance.loadRecent(100_000);
        if (!window.ok) throw new Error(window.error.message);
        const t0 = performance.now();
        for (let c = 0; c < CALLS_PER_SAMPLE; c++) {
          const r = instance.reconcile(resends[i]!);
          if (!r.ok) throw new Error(r.error.message);
          expect(r.value).toMatchObject({ matched: 1000, append_from: 1000, branch_from: null });
        }
        const t1 = performance.now();
        for (let c = 0; c < CALLS_PER_SAMPLE; c++) {
          expect(ThreadStore.of(state.storage).reconcile(resends[i]!)).toMatchObject({ matched: 1000, append_from: 1000 });
        }
        if (s >= 0) {
          ms.warm[i]!.push((t1 - t0) / CALLS_PER_SAMPLE);
          ms.cold[i]!.push((performance.now() - t1) / CALLS_PER_SAMPLE);
        }
      });
    }
  }
  const [warmSmall, warmLarge, coldSmall, coldLarge] = [median(ms.warm[0]!), median(ms.warm[1]!), median(ms.cold[0]!), median(ms.cold[1]!)];
  report("thread-reconcile", {
    resend_messages: 1001,
    warm_ms_at_1000: +warmSmall.toFixed(4),
    warm_ms_at_100000: +warmLarge.toFixed(4),
    warm_ratio: +(warmLarge / warmSmall).toFixed(3),
    cold_ms_at_1000: +coldSmall.toFixed(4),
    cold_ms_at_100000: +coldLarge.toFixed(4),
    cold_ratio: +(coldLarge / coldSmall).toFixed(3),
    goal: "added <= 1 ms (warm: the turn after a turn), ratio <= 1.1",
  });
});
