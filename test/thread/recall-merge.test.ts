import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ThreadStore } from "../../src/thread/thread-store";
import { unique } from "./support";

/**
 * The recall index's segments are merged after a turn's answer, not inside the writes that add them
 * (src/thread/recall-index.ts, v9): FTS5's automerge is off, mergeRecallIndex does that work, and the
 * index answers every query the same before and after.
 */

/** FTS5 segments in the index: one row per segment in `_idx` for segments this small. */
const segments = (sql: SqlStorage) => sql.exec<{ n: number }>("SELECT count(DISTINCT segid) AS n FROM recall_fts_idx").one().n;
const ranked = (sql: SqlStorage, query: string) =>
  sql
    .exec<{ seq: number; bm: number }>("SELECT rowid AS seq, bm25(recall_fts) AS bm FROM recall_fts WHERE recall_fts MATCH ? ORDER BY bm, seq", query)
    .toArray();

describe("recall index merging", () => {
  it("FTS5 merges nothing inside a write; mergeRecallIndex merges, and every query ranks the same rows the same", async () => {
    const stub = env.THREADS.get(env.THREADS.idFromName(unique("recall-merge")));
    await runInDurableObject(stub, async (_live, state) => {
      await state.storage.deleteAll();
      const store = ThreadStore.of(state.storage);
      const sql = state.storage.sql;
      for (let i = 0; i < 12; i++)
        store.update(
          { ops: [{ op: "append", messages: [{ role: i % 2 ? "assistant" : "user", content: `apple ${["pear", "plum", "fig"][i % 3]} turn ${i}` }] }] },
          "update",
        );
      expect(sql.exec<{ v: number }>("SELECT v FROM recall_fts_config WHERE k = 'automerge'").one().v).toBe(0);
      // Each write left its own segment (with automerge, every fourth write merged them inside that write).
      expect(segments(sql)).toBe(12);
      const queries = ['"apple"', '"plum"', '"fig" OR "turn"', '"pear" AND "apple"'];
      const before = queries.map((q) => ranked(sql, q));
      store.mergeRecallIndex();
      expect(segments(sql)).toBeLessThan(12);
      expect(queries.map((q) => ranked(sql, q))).toEqual(before);
      expect(before[0]).toHaveLength(12);
    });
  });
});
