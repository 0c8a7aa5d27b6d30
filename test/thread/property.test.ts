import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ThreadStore, toThreadState } from "../../src/thread/thread-store";
import type { ThreadState, UpdateOp } from "../../src/thread/types";
import { newThread, stubOf } from "./support";

// Small id and channel pools so ops collide: replaces, removes of live and dead ids, reducer clashes.
const msgId = fc.constantFrom("a", "b", "c", "d");
const channel = fc.constantFrom("x", "y", "z");
const message = fc.record(
  { id: fc.option(msgId, { nil: undefined }), role: fc.constantFrom("user", "assistant", "system"), content: fc.string({ maxLength: 12 }) },
  { requiredKeys: ["role", "content"] },
);
const op: fc.Arbitrary<UpdateOp> = fc.oneof(
  fc.record({ op: fc.constant("append"), messages: fc.array(message, { minLength: 1, maxLength: 3 }) }),
  fc.record({ op: fc.constant("replace"), message: fc.record({ id: msgId, role: fc.constant("user"), content: fc.string({ maxLength: 5 }) }) }),
  fc.record({ op: fc.constant("remove"), id: msgId }),
  fc.constant({ op: "remove_all" as const }),
  fc.record({
    op: fc.constant("set"),
    channel,
    reducer: fc.constant("last_value" as const),
    value: fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.constant(null)),
  }),
  fc.record({ op: fc.constant("set"), channel, reducer: fc.constant("append" as const), value: fc.array(fc.integer(), { maxLength: 3 }) }),
  fc.record({ op: fc.constant("set"), channel, reducer: fc.constant("merge" as const), value: fc.dictionary(fc.constantFrom("k", "l", "m"), fc.integer()) }),
  fc.record({ op: fc.constant("set"), channel, value: fc.array(fc.integer(), { maxLength: 2 }) }),
);
const step = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("update" as const), ops: fc.array(op, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("fork" as const), pick: fc.nat() }) },
);

describe("property: checkpoints reconstruct the live state", () => {
  it("after any sequence of updates and forks, every checkpoint replays to the state seen when it was head", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const t = newThread();
        const seen = new Map<string, ThreadState>();
        let current = await t.getState();
        for (const s of steps) {
          if (s.kind === "fork") {
            const ids = [...seen.keys()];
            if (ids.length === 0) continue;
            await t.fork(ids[s.pick % ids.length]!);
          } else {
            try {
              // fast-check builds null-prototype records, which RPC refuses to clone: send plain JSON.
              await t.update({ ops: JSON.parse(JSON.stringify(s.ops)) as UpdateOp[] }, "update");
            } catch (e) {
              // A rejected update changes nothing.
              expect((e as { code?: string }).code).toMatch(/^BEM-03[1-7]$/);
              expect(await t.getState()).toEqual(current);
              continue;
            }
          }
          current = await t.getState();
          seen.set(current.checkpoint_id!, current);
        }
        for (const [id, state] of seen) expect(await t.getState(id)).toEqual(state);
        // And replaying the head's chain gives exactly the live tables.
        await runInDurableObject(stubOf(t), (_live, state) => {
          if (!current.checkpoint_id) return;
          const replayed = toThreadState(current.checkpoint_id, current.step, ThreadStore.of(state.storage).replay(current.checkpoint_id));
          expect(replayed).toEqual({ ...current, thread_id: undefined });
        });
      }),
      { numRuns: 40 },
    );
  });
});
