import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../src/core/tokens";
import { ThreadStore } from "../../src/thread/thread-store";
import { newThread, stubOf, user } from "./support";

describe("loadRecent", () => {
  it("returns the newest messages that fit, oldest first, with their token sum", async () => {
    const t = newThread();
    // 150 messages crosses several scan chunks.
    const all = Array.from({ length: 150 }, (_, i) => user(`message number ${i} `.repeat((i % 5) + 1)));
    for (let i = 0; i < all.length; i += 50) await t.appendMessages(all.slice(i, i + 50), "input");
    const stored = (await t.getState()).channels.messages;
    const budget = 1500;
    // Expected: walk from the newest while the running sum fits.
    let sum = 0;
    let k = stored.length;
    while (k > 0 && sum + estimateTokens(stored[k - 1]!) <= budget) sum += estimateTokens(stored[--k]!);
    const r = await t.loadRecent(budget);
    expect(r.messages.map((m) => m.id)).toEqual(stored.slice(k).map((m) => m.id));
    expect(r.tokens).toBe(sum);
    expect(r.truncated).toBe(true);
    expect(r.messages.length).toBeGreaterThan(64);

    const everything = await t.loadRecent(1_000_000);
    expect(everything.messages).toEqual(stored);
    expect(everything.truncated).toBe(false);
  });

  it("maxMessages caps the count; a budget below the newest message returns nothing", async () => {
    const t = newThread();
    await t.appendMessages([user("a"), user("b"), user("c"), user("a much longer message ".repeat(20))], "input");
    const capped = await t.loadRecent(10_000, { maxMessages: 2 });
    expect(capped.messages.map((m) => m.content)).toEqual(["c", "a much longer message ".repeat(20)]);
    expect(capped.truncated).toBe(true);
    expect(await t.loadRecent(10)).toEqual({ messages: [], tokens: 0, truncated: true });
  });

  it("reads from SQLite only about the rows it returns, not the thread's 2000", async () => {
    const t = newThread();
    for (let i = 0; i < 4; i++)
      await t.appendMessages(
        Array.from({ length: 500 }, (_, j) => user(`row ${i}-${j} `.repeat(4))),
        "input",
      );
    await runInDurableObject(stubOf(t), (_live, state) => {
      const store = ThreadStore.of(state.storage);
      const r = store.recent(300);
      expect(r.messages.length).toBeGreaterThan(5);
      // +1 the row that did not fit, +1 the cursor's look-ahead.
      expect(store.lastScanRows).toBeLessThanOrEqual(r.messages.length + 2);
    });
  });

  it("an empty thread loads nothing and is not truncated", async () => {
    expect(await newThread().loadRecent(4000)).toEqual({ messages: [], tokens: 0, truncated: false });
  });

  it("follows the head: removed and replaced messages are not loaded", async () => {
    const t = newThread();
    await t.appendMessages([user("old", "o"), user("mid", "m"), user("new", "n")], "input");
    await t.update(
      [
        { op: "remove", id: "o" },
        { op: "replace", message: user("MID", "m") },
      ],
      "update",
    );
    expect((await t.loadRecent(1000)).messages.map((m) => m.content)).toEqual(["MID", "new"]);
  });
});
