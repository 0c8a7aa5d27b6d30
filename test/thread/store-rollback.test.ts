import { describe, expect, it } from "vitest";
import { type StoreLimits, ThreadStore } from "../../src/thread/thread-store";
import { codeOfSync, withStorage } from "./support";

/**
 * A write that rolls back leaves the store's memory (head, live bytes, tail cache, history total) as
 * storage is: the same answers as a store opened fresh over the same storage, and the next write
 * continues from the stored head. Real SqlStorage of a thread object.
 */

/** What a store answers that memory could hold wrongly. */
const view = (store: ThreadStore) => ({
  head: store.headId(),
  recent: store.recent(1_000_000).messages.map((m) => m.content),
  bytes: store.storedBytes(),
  state: store.statePage(undefined).channels.messages.map((m) => m.content),
});

const user = (content: string) => ({ role: "user" as const, content });

describe("ThreadStore: memory after a rolled-back write", () => {
  it("a throw from `alongside` (inside the transaction, after the checkpoint) rolls back memory with storage", () =>
    withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const first = store.update({ ops: [{ op: "append", messages: [user("a")] }] }, "input");
      store.recent(1_000_000); // the tail cache now holds the thread
      const before = view(store);
      const code = codeOfSync(() =>
        store.update({ ops: [{ op: "append", messages: [user("b")] }] }, "input", () => {
          throw new Error("the stored Response did not fit");
        }),
      );
      expect(code).toMatch(/^not coded: Error: the stored Response did not fit/);
      expect(view(store)).toEqual(before);
      expect(view(ThreadStore.of(storage))).toEqual(before);
      // The next write's parent is the stored head, and the cache holds what storage holds.
      const next = store.update({ ops: [{ op: "append", messages: [user("c")] }] }, "input");
      expect(next.parent_id).toBe(first.id);
      expect(view(store)).toEqual(view(ThreadStore.of(storage)));
      expect(view(store).recent).toEqual(["a", "c"]);
    }));

  it("a 413 (MAX_THREAD_BYTES, history cap) after appends, a replace and a remove_all in one update leaves memory as storage is", () =>
    withStorage((storage) => {
      const limits: StoreLimits = { messageBytes: 1_000_000, threadMessages: 1_000, threadBytes: 4_000, historyBytes: 40_000 };
      const store = ThreadStore.of(storage, { limits });
      const a = store.update({ ops: [{ op: "append", messages: [{ ...user("a"), id: "m-a" }, user("b")] }] }, "input");
      store.recent(1_000_000);
      const before = view(store);
      const big = "x".repeat(5_000);
      expect(
        codeOfSync(() =>
          store.update(
            {
              ops: [
                { op: "append", messages: [user("c")] },
                { op: "replace", message: { ...user("A"), id: "m-a" } },
                { op: "remove_all" },
                { op: "append", messages: [user(big)] },
              ],
            },
            "update",
          ),
        ),
      ).toBe("BEM-097");
      expect(view(store)).toEqual(before);
      expect(view(ThreadStore.of(storage))).toEqual(before);
      // Writes until the history cap: each refused one leaves the total as stored, so the fresh store refuses the same write.
      let refused = 0;
      for (let i = 0; i < 40 && refused < 3; i++) {
        const text = `${i}`.padEnd(1_500, ".");
        const ops = [{ op: "remove_all" as const }, { op: "append" as const, messages: [user(text)] }];
        const code = codeOfSync(() => store.update({ ops }, "update"));
        const fresh = ThreadStore.of(storage, { limits });
        expect(view(store)).toEqual(view(fresh));
        if (code === "BEM-019") {
          refused++;
          expect(codeOfSync(() => fresh.update({ ops }, "update"))).toBe("BEM-019");
        } else expect(code).toBe("no error");
      }
      expect(refused).toBe(3);
      const stored = view(ThreadStore.of(storage)).head;
      expect(store.update({ ops: [{ op: "set", channel: "k", value: 1 }] }, "update").parent_id).toBe(stored);
      expect(stored).not.toBe(a.id);
    }));
});

describe("ThreadStore: channels written again without a read (their reducer and size kept from the last write)", () => {
  it("sizes and reducers stay as stored across rewrites, a rolled-back write and a fork", () =>
    withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const set = (channel: string, value: unknown, reducer?: "last_value" | "append") =>
        store.update({ ops: [{ op: "set", channel, value, ...(reducer ? { reducer } : {}) }] }, "update");
      const same = () => expect(view(store)).toEqual(view(ThreadStore.of(storage)));
      const first = set("route", "short");
      same();
      set("route", { longer: "a value of another size", n: [1, 2, 3] });
      same();
      set("route", "é");
      same();
      expect(codeOfSync(() => set("route", ["x"], "append"))).toBe("BEM-037");
      // A rolled-back write of a bigger value leaves the size the store counts as the stored one.
      const code = codeOfSync(() =>
        store.update({ ops: [{ op: "set", channel: "route", value: "y".repeat(3_000) }] }, "update", () => {
          throw new Error("rolled back");
        }),
      );
      expect(code).toMatch(/^not coded/);
      same();
      set("route", "after");
      same();
      // Messages appended twice in one update, one stored before: each counted once, as a fresh store sums them.
      store.update({ ops: [{ op: "append", messages: [{ ...user("a"), id: "m1" }] }] }, "input");
      store.update(
        {
          ops: [
            {
              op: "append",
              messages: [
                { ...user("A longer one"), id: "m1" },
                { ...user("b"), id: "m2" },
              ],
            },
            {
              op: "append",
              messages: [
                { ...user("B"), id: "m2" },
                { ...user("á"), id: "m1" },
              ],
            },
          ],
        },
        "input",
      );
      same();
      set("tags", ["a"], "append");
      set("tags", ["b"]);
      expect(store.statePage(undefined).channels.tags).toEqual(["a", "b"]);
      expect(codeOfSync(() => set("tags", "c", "last_value"))).toBe("BEM-037");
      same();
      // A fork rebuilds the channels as they were at its checkpoint: the next write counts from there.
      store.fork(first.id);
      same();
      set("route", "after the fork, longer than before");
      same();
      expect(store.statePage(undefined).channels.route).toBe("after the fork, longer than before");
    }));
});

describe("ThreadStore: what the multi-row INSERT stores", () => {
  it("stores every message's content as sent (NUL, lone surrogates, emoji, line separators, quotes, near the batch size)", () =>
    withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const contents = ["a\u0000b", "\ud800 lone \udfff", "😀 \u2028\u2029 \\\" ' \t", "é".repeat(299_990), '"'.repeat(200_000), "\u0000".repeat(100_000), "z"];
      store.update({ ops: [{ op: "append", messages: contents.map(user) }] }, "input");
      const fresh = ThreadStore.of(storage);
      // Lone surrogates come back as JSON would carry them: the stored text is what encodeMessage wrote, read the same both ways.
      expect(fresh.statePage(undefined).channels.messages.map((m) => m.content)).toEqual(store.recent(10_000_000).messages.map((m) => m.content));
      expect(fresh.recent(10_000_000).messages.map((m) => m.content)).toEqual(contents);
    }));
});
