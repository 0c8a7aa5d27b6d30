import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isAppError } from "../../src/core/errors";
import { ThreadStore } from "../../src/thread/thread-store";
import type { UpdateOp } from "../../src/thread/types";
import { unique } from "./support";

/**
 * A store kept across writes answers from memory (the decoded tail, the live byte count);
 * one opened afresh over the same SQLite reads everything from storage. After any sequence
 * of writes (appends, replaces, removes, resets, channel sets, forks) the two must agree on
 * the window at every budget, on reconciliation of a resend, and on the thread's bytes.
 */

type Step =
  | { kind: "append"; texts: string[] }
  | { kind: "replace"; pick: number; text: string }
  | { kind: "remove"; pick: number }
  | { kind: "remove_all" }
  | { kind: "set"; value: string }
  | { kind: "fork"; pick: number }
  | { kind: "read"; budget: number; maxMessages: number | undefined };

const text = fc.string({ minLength: 0, maxLength: 40 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("append" as const), texts: fc.array(text, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("replace" as const), pick: fc.nat(), text }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove_all" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("set" as const), value: text }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("fork" as const), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("read" as const),
      budget: fc.integer({ min: 0, max: 400 }),
      maxMessages: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
    }),
  },
);

describe("tail cache and live byte count", () => {
  it("a long-lived store answers exactly like a store opened afresh, after any writes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const stub = env.THREADS.get(env.THREADS.idFromName(unique("tail")));
        await runInDurableObject(stub, async (_live, state) => {
          await state.storage.deleteAll();
          const kept = ThreadStore.of(state.storage);
          const fresh = () => ThreadStore.of(state.storage);
          const ids = () =>
            fresh()
              .statePage(null)
              .channels.messages.map((m) => m.id);
          const checkpoints: string[] = [];
          const write = (ops: UpdateOp[]) => {
            try {
              checkpoints.push(kept.update({ ops }, "update").id);
            } catch (e) {
              if (!isAppError(e)) throw e; // a refused write (a rollback) must leave memory as it was, too
            }
          };
          for (const s of steps) {
            const live = ids();
            if (s.kind === "append") write([{ op: "append", messages: s.texts.map((t, i) => ({ role: i % 2 ? "assistant" : "user", content: t })) }]);
            else if (s.kind === "replace" && live.length > 0)
              write([{ op: "replace", message: { id: live[s.pick % live.length]!, role: "user", content: s.text } }]);
            else if (s.kind === "remove" && live.length > 0) write([{ op: "remove", id: live[s.pick % live.length]! }]);
            else if (s.kind === "remove_all") write([{ op: "remove_all" }]);
            else if (s.kind === "set") write([{ op: "set", channel: "notes", value: s.value }]);
            else if (s.kind === "fork" && checkpoints.length > 0) checkpoints.push(kept.fork(checkpoints[s.pick % checkpoints.length]!).id);
            else if (s.kind === "read") {
              const opts = s.maxMessages === undefined ? {} : { maxMessages: s.maxMessages };
              expect(kept.recent(s.budget, opts)).toEqual(fresh().recent(s.budget, opts));
            }
            expect(kept.storedBytes()).toBe(fresh().storedBytes());
            const all = fresh().statePage(null).channels.messages;
            // A resend of the newest messages plus a new one: the kept store may answer from its cache.
            const resend = [...all.slice(-3), { role: "user" as const, content: "a new question" }];
            expect(kept.reconcile(resend)).toEqual(fresh().reconcile(resend));
          }
        });
      }),
      { numRuns: 60 },
    );
  });

  it("the window comes from memory on the turn after a turn: no rows read", async () => {
    const stub = env.THREADS.get(env.THREADS.idFromName(unique("tail")));
    await runInDurableObject(stub, async (_live, state) => {
      const store = ThreadStore.of(state.storage);
      store.update({ ops: [{ op: "append", messages: [{ role: "user", content: "q1" }] }] }, "input");
      store.recent(10_000);
      expect(store.lastScanRows).toBeGreaterThan(0);
      store.update({ ops: [{ op: "append", messages: [{ role: "assistant", content: "a1" }] }] }, "input");
      const next = store.recent(10_000);
      expect(store.lastScanRows).toBe(0);
      expect(next.messages.map((m) => m.content)).toEqual(["q1", "a1"]);
      expect(Object.isFrozen(next.messages[0])).toBe(true);
    });
  });
  it("a tool answer is checked against the calls open at the tail, read from the cache and past it from storage", async () => {
    const stub = env.THREADS.get(env.THREADS.idFromName(unique("tail-tools")));
    await runInDurableObject(stub, async (_live, state) => {
      const store = ThreadStore.of(state.storage);
      const calls = ["c1", "c2", "c3"].map((id) => ({ id, type: "function" as const, function: { name: "f", arguments: "{}" } }));
      store.update(
        {
          ops: [
            {
              op: "append",
              messages: [
                { role: "user", content: "q" },
                { role: "assistant", content: null, tool_calls: calls },
                { role: "tool", content: "1", tool_call_id: "c1" },
              ],
            },
          ],
        },
        "input",
      );
      // A window of the newest message only: the cache holds the c1 answer, not the call before it.
      const window = store.recent(10_000, { maxMessages: 1 });
      expect(window.messages.map((m) => m.role)).toEqual(["tool"]);
      expect(window.truncated).toBe(true);
      const answer = (id: string) => () => store.update({ ops: [{ op: "append", messages: [{ role: "tool", content: id, tool_call_id: id }] }] }, "input");
      const code = (fn: () => unknown) => {
        try {
          fn();
          return "stored";
        } catch (e) {
          return isAppError(e) ? e.code : String(e);
        }
      };
      expect(code(answer("c2"))).toBe("stored");
      expect(code(answer("c1"))).toBe("BEM-096");
      expect(code(answer("c9"))).toBe("BEM-096");
      expect(code(answer("c3"))).toBe("stored");
      expect(code(answer("c3"))).toBe("BEM-096");
    });
  });
});
