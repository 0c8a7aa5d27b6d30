import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import type { MessageInput } from "../../src/core/message";
import { indexWaiting, RECALL_BATCH_ROWS, recallIndexed } from "../../src/thread/recall-index";
import { ThreadStore } from "../../src/thread/thread-store";
import type { RecallAsk } from "../../src/thread/types";
import { unique } from "./support";

/**
 * The recall index's own upkeep (src/thread/recall-index.ts): new messages join it in batches
 * (v10) — after a run's answer once RECALL_BATCH_ROWS wait, or before a recall that reaches
 * one — and its segments merge after the answer, not inside the writes that add them (v9).
 * What a recall finds is the same as when every write indexed its own messages.
 */

type Storage = DurableObjectStorage;

async function withStorage<T>(fn: (storage: Storage) => T | Promise<T>): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique("recall-index")));
  return runInDurableObject(stub, async (_live, state) => {
    await state.storage.deleteAll();
    return fn(state.storage);
  });
}

/** FTS5 segments in the index: one row per segment in `_idx` for segments this small. */
const segments = (sql: SqlStorage) => sql.exec<{ n: number }>("SELECT count(DISTINCT segid) AS n FROM recall_fts_idx").one().n;
/** The positions the index holds a row for. */
const indexedRows = (sql: SqlStorage) =>
  sql
    .exec<{ id: number }>("SELECT id FROM recall_fts_docsize ORDER BY id")
    .toArray()
    .map((r) => r.id);
const ranked = (sql: SqlStorage, query: string) =>
  sql
    .exec<{ seq: number; bm: number }>("SELECT rowid AS seq, bm25(recall_fts) AS bm FROM recall_fts WHERE recall_fts MATCH ? ORDER BY bm, seq", query)
    .toArray();
const catchUp = (storage: Storage) => storage.transactionSync(() => indexWaiting(storage.sql));
const ask = (query: string): RecallAsk => ({ query, share: 0.75, neighbours: 1 });
const line = (i: number): MessageInput => ({ id: `m${i}`, role: i % 2 ? "assistant" : "user", content: `apple ${["pear", "plum", "fig"][i % 3]} turn ${i}` });

describe("recall index upkeep", () => {
  it("a write leaves its new messages waiting; a recall reaching one brings them in first and finds what indexing every write finds", async () => {
    const recalledWith = async (eager: boolean) =>
      withStorage((storage) => {
        const store = ThreadStore.of(storage);
        const sql = storage.sql;
        store.update({ ops: [{ op: "append", messages: [{ id: "bike", role: "user", content: "The blue bicycle is behind the library." }] }] }, "update");
        for (let i = 0; i < 40; i++) {
          store.update({ ops: [{ op: "append", messages: [line(i)] }] }, "update");
          if (eager) catchUp(storage);
        }
        if (!eager) {
          // Nothing indexed by the writes themselves, and no segment written.
          expect(indexedRows(sql)).toEqual([]);
          expect(recallIndexed(sql)).toEqual({ through: 0, highest: 41 });
        }
        const r = store.recent(150, { recall: ask("Where is the bicycle?") });
        // Every live message is in the index now: the recall reached below its window.
        expect(indexedRows(sql)).toHaveLength(41);
        expect(recallIndexed(sql).through).toBe(41);
        return (r.recalled ?? []).map((t) => [t.message.id, t.score]);
      });
    const lazy = await recalledWith(false);
    expect(lazy.map(([id]) => id)).toContain("bike");
    expect(lazy).toEqual(await recalledWith(true));
  });

  it("a recall whose window holds every waiting message reads the index as it is, and brings nothing in", async () => {
    await withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const sql = storage.sql;
      store.update(
        {
          ops: [
            {
              op: "append",
              messages: [{ role: "user", content: "The blue bicycle is behind the library." }, ...Array.from({ length: 30 }, (_, i) => line(i))],
            },
          ],
        },
        "update",
      );
      catchUp(storage);
      store.update({ ops: [{ op: "append", messages: [line(100), line(101)] }] }, "update");
      const r = store.recent(150, { recall: ask("bicycle") });
      expect(r.recalled?.length).toBeGreaterThan(0);
      expect(recallIndexed(sql)).toEqual({ through: 31, highest: 33 });
    });
  });

  it(`after a run's answer the waiting messages join in one segment once ${RECALL_BATCH_ROWS} wait, and merging keeps every query's ranking`, async () => {
    await withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const sql = storage.sql;
      expect(sql.exec<{ v: number }>("SELECT v FROM recall_fts_config WHERE k = 'automerge'").one().v).toBe(0);
      let i = 0;
      for (; i < RECALL_BATCH_ROWS - 1; i++) store.update({ ops: [{ op: "append", messages: [line(i)] }] }, "update");
      store.settleRecallIndex();
      expect(indexedRows(sql)).toEqual([]);
      store.update({ ops: [{ op: "append", messages: [line(i++)] }] }, "update");
      store.settleRecallIndex();
      expect(indexedRows(sql)).toHaveLength(RECALL_BATCH_ROWS);
      expect(segments(sql)).toBe(1);
      // Twelve batches without merging (catch-ups, as recalls do them): twelve segments, then fewer once merged.
      for (let b = 0; b < 11; b++) {
        store.update({ ops: [{ op: "append", messages: [line(i++), line(i++)] }] }, "update");
        catchUp(storage);
      }
      expect(segments(sql)).toBe(12);
      const queries = ['"apple"', '"plum"', '"fig" OR "turn"', '"pear" AND "apple"'];
      const before = queries.map((q) => ranked(sql, q));
      store.settleRecallIndex();
      expect(segments(sql)).toBeLessThan(12);
      expect(queries.map((q) => ranked(sql, q))).toEqual(before);
      expect(before[0]).toHaveLength(i);
    });
  });

  it("settling after an answer runs a statement only when a batch is due or the index may have segments to merge", async () => {
    await withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const sql = storage.sql;
      const statements: string[] = [];
      const exec = sql.exec.bind(sql);
      vi.spyOn(sql, "exec").mockImplementation((query: string, ...bindings: unknown[]) => {
        statements.push(query);
        return exec(query, ...bindings);
      });
      /** The statements one settle ran (only the index's upkeep: nothing else runs meanwhile). */
      const settled = () => {
        statements.length = 0;
        store.settleRecallIndex();
        return statements.map((q) => q.replace(/\s+/g, " ").slice(0, 70));
      };
      const append = (n: number) =>
        store.update({ ops: [{ op: "append", messages: Array.from({ length: n }, (_, k) => line(100 + k + Math.random())) }] }, "update");
      /** Settles until one runs nothing (merging may take more than one), at most `max` times. */
      const settleOut = (max: number) => {
        for (let k = 0; k < max; k++) if (settled().length === 0) return k;
        throw new Error(`still settling after ${max}`);
      };
      append(1);
      // A new object reads what waits once, and merges once: it cannot know what an earlier one left.
      expect(settled().filter((q) => q.startsWith("SELECT through"))).toHaveLength(1);
      settleOut(3);
      // Below a batch, nothing: what waits is counted from the object's own appends.
      for (let k = 2; k < RECALL_BATCH_ROWS; k++) {
        append(1);
        expect(settled()).toEqual([]);
      }
      expect(indexedRows(sql)).toEqual([]);
      append(1);
      const joined = settled();
      expect(joined.some((q) => q.startsWith("INSERT INTO recall_fts (rowid, text)"))).toBe(true);
      expect(joined.some((q) => q.startsWith("SELECT through"))).toBe(false);
      expect(indexedRows(sql)).toHaveLength(RECALL_BATCH_ROWS);
      expect(settleOut(3)).toBeGreaterThanOrEqual(0);
      expect(settled()).toEqual([]);
      // A write other than appends (here a replace of an indexed message, which its trigger re-indexes): read and merge again.
      store.update({ ops: [{ op: "replace", message: { ...line(100), id: store.recent(10_000).messages[0]!.id, content: "kayak" } }] }, "update");
      expect(settled().filter((q) => q.startsWith("SELECT through") || q.includes("'merge'"))).toHaveLength(2);
      expect(ranked(sql, '"kayak"').map((r) => r.seq)).toEqual([1]);
    });
  });

  it("indexed messages follow their write: a replace or remove shows at once, and a position reused after a remove is indexed by its own write", async () => {
    await withStorage((storage) => {
      const store = ThreadStore.of(storage);
      const sql = storage.sql;
      store.update({ ops: [{ op: "append", messages: Array.from({ length: 6 }, (_, i) => line(i)) }] }, "update");
      catchUp(storage);
      store.update({ ops: [{ op: "replace", message: { id: "m2", role: "user", content: "kayak on the lake" } }] }, "update");
      expect(ranked(sql, '"kayak"').map((r) => r.seq)).toEqual([3]);
      expect(ranked(sql, '"fig"').map((r) => r.seq)).toEqual([6]);
      store.update({ ops: [{ op: "remove", id: "m5" }] }, "update");
      expect(indexedRows(sql)).toEqual([1, 2, 3, 4, 5]);
      // The next message takes position 6 again, at or below the index's reach: its own write indexes it.
      store.update({ ops: [{ op: "append", messages: [{ id: "new", role: "user", content: "a heron by the river" }] }] }, "update");
      expect(ranked(sql, '"heron"').map((r) => r.seq)).toEqual([6]);
      expect(recallIndexed(sql)).toEqual({ through: 6, highest: 6 });
    });
  });

  it("property (fixed seed): whatever the writes, the index holds exactly the live user and assistant messages up to its reach, and all of them after a catch-up", async () => {
    const words = ["apple", "pear", "plum", "fig", "kiwi"];
    const op = fc.oneof(
      fc.record({
        k: fc.constant("append" as const),
        roles: fc.array(fc.constantFrom("user", "assistant", "system"), { minLength: 1, maxLength: 3 }),
        w: fc.nat(4),
      }),
      fc.record({ k: fc.constant("replace" as const), at: fc.nat(), role: fc.constantFrom("user", "assistant", "system"), w: fc.nat(4) }),
      fc.record({ k: fc.constant("remove" as const), at: fc.nat() }),
      fc.record({ k: fc.constantFrom("remove_all" as const, "settle" as const, "catchUp" as const) }),
      fc.record({ k: fc.constant("fork" as const), at: fc.nat() }),
    );
    await withStorage(async (storage) => {
      const sql = storage.sql;
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
          await storage.deleteAll();
          const store = ThreadStore.of(storage);
          const checkpoints: string[] = [];
          let n = 0;
          const live = () =>
            sql.exec<{ seq: number; id: string; role: string; json: string }>("SELECT seq, id, role, json FROM messages ORDER BY seq").toArray();
          for (const o of ops) {
            const rows = live();
            if (o.k === "append")
              checkpoints.push(
                store.update(
                  { ops: [{ op: "append", messages: o.roles.map((role) => ({ id: `p${++n}`, role, content: `${words[o.w]} ${words[n % 5]}` })) }] },
                  "update",
                ).id,
              );
            else if (o.k === "replace" && rows.length > 0) {
              const id = rows[o.at % rows.length]!.id;
              store.update({ ops: [{ op: "replace", message: { id, role: o.role, content: `${words[o.w]} replaced` } }] }, "update");
            } else if (o.k === "remove" && rows.length > 0) store.update({ ops: [{ op: "remove", id: rows[o.at % rows.length]!.id }] }, "update");
            else if (o.k === "remove_all") store.update({ ops: [{ op: "remove_all" }] }, "update");
            else if (o.k === "settle") store.settleRecallIndex();
            else if (o.k === "catchUp") catchUp(storage);
            else if (o.k === "fork" && checkpoints.length > 0) store.fork(checkpoints[o.at % checkpoints.length]!);
            const { through } = recallIndexed(sql);
            const wanted = live().filter((r) => r.role === "user" || r.role === "assistant");
            expect(indexedRows(sql)).toEqual(wanted.filter((r) => r.seq <= through).map((r) => r.seq));
          }
          catchUp(storage);
          const wanted = live().filter((r) => r.role === "user" || r.role === "assistant");
          expect(indexedRows(sql)).toEqual(wanted.map((r) => r.seq));
          // And each word finds exactly the live messages holding it.
          for (const w of [...words, "replaced"])
            expect(
              ranked(sql, `"${w}"`)
                .map((r) => r.seq)
                .sort((a, b) => a - b),
            ).toEqual(wanted.filter((r) => (JSON.parse(r.json) as { content: string }).content.split(" ").includes(w)).map((r) => r.seq));
        }),
        { seed: 20_261_202, numRuns: 60 },
      );
    });
  });
});
