import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { messageHash } from "../src/thread/message-hash";
import type { ThreadDO } from "../src/thread/thread-do";
import { line, median, report, seedMessages, stubFor } from "./thread-support";

/**
 * Resent-history reconciliation of a 1,000-message resend (the thread's last 1,000 messages
 * plus one new) on a 100,000-message thread, against the same resend on a 1,000-message
 * thread. What it adds to a turn: hashing the sent messages (worker) + the object's
 * reconcile (reads ≤ 2 × 1,000 rows). Goal: ≤ 1 ms added, and the same at both sizes.
 */
const SAMPLES = 41;
const CALLS_PER_SAMPLE = 10;

it("reconcile a 1,000-message resend: 1,000 vs 100,000-message thread", async () => {
  const sizes = [1_000, 100_000] as const;
  const stubs = sizes.map((n) => stubFor(`reconcile-${n}`));
  for (const [i, n] of sizes.entries()) await runInDurableObject(stubs[i]!, (instance: ThreadDO) => seedMessages(instance, n));
  const resendFor = (n: number) => [
    ...Array.from({ length: 1000 }, (_, j) => ({ role: (n - 1000 + j) % 2 ? ("assistant" as const) : ("user" as const), content: line(n - 1000 + j) })),
    { role: "user" as const, content: "and one new question" },
  ];
  const resends = sizes.map(resendFor);
  const hashMs: number[] = [];
  const ms: number[][] = [[], []];
  for (let s = -3; s < SAMPLES; s++) {
    for (const i of s % 2 ? [0, 1] : [1, 0]) {
      // Hashing happens in the worker, per request.
      const h0 = performance.now();
      let hashes: string[] = [];
      for (let c = 0; c < CALLS_PER_SAMPLE; c++) hashes = resends[i]!.map(messageHash);
      if (s >= 0 && i === 1) hashMs.push((performance.now() - h0) / CALLS_PER_SAMPLE);
      await runInDurableObject(stubs[i]!, (instance: ThreadDO) => {
        const t0 = performance.now();
        for (let c = 0; c < CALLS_PER_SAMPLE; c++) {
          const r = instance.reconcile(hashes);
          if (!r.ok) throw new Error(r.error.message);
          expect(r.value).toMatchObject({ matched: 1000, append_from: 1000, branch_from: null });
        }
        if (s >= 0) ms[i]!.push((performance.now() - t0) / CALLS_PER_SAMPLE);
      });
    }
  }
  const [small, large, hash] = [median(ms[0]!), median(ms[1]!), median(hashMs)];
  report("thread-reconcile", {
    resend_messages: 1001,
    median_reconcile_ms_at_1000: +small.toFixed(4),
    median_reconcile_ms_at_100000: +large.toFixed(4),
    ratio: +(large / small).toFixed(3),
    median_hash_ms: +hash.toFixed(4),
    added_ms_at_100000: +(large + hash).toFixed(4),
    goal: "added <= 1 ms, ratio <= 1.1",
  });
});
