/**
 * A run reads its thread's newest window once, with its whole budget, in the
 * call that takes the lease; the memory layers then cut it to smaller budgets.
 * That cut must equal what the thread itself would return for the smaller budget.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { preloadedSession } from "../../src/memory/session-backend";
import { newThread } from "./support";

describe("preloaded session window", () => {
  it("cutting the full-budget window to any smaller budget equals the thread's own loadRecent", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ minLength: 0, maxLength: 120 }), { minLength: 0, maxLength: 25 }),
        fc.integer({ min: 0, max: 600 }),
        fc.array(fc.integer({ min: 0, max: 700 }), { minLength: 1, maxLength: 5 }),
        async (texts, budget, asks) => {
          const t = newThread();
          if (texts.length > 0)
            await t.appendMessages(
              texts.map((content, i) => ({ role: i % 2 ? ("assistant" as const) : ("user" as const), content })),
              "input",
            );
          const run = await t.beginRun({ recentTokens: budget });
          try {
            const session = preloadedSession(async () => run.recent!, budget, t);
            for (const ask of asks) {
              expect(await session.loadRecent(ask)).toEqual(await t.loadRecent(ask));
            }
          } finally {
            await run.end();
          }
        },
      ),
      { numRuns: 40, seed: 20261129 },
    );
  });
});
