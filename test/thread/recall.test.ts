import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MessageInput } from "../../src/core/message";
import { indexWaiting, recallMatch, searchRecall, WordCounts } from "../../src/thread/recall-index";
import { RecallScores } from "../../src/thread/recall-scores";
import { MIGRATIONS, openThreadMeta } from "../../src/thread/sql-schema";
import { ThreadStore } from "../../src/thread/thread-store";
import type { LoadRecentResult, RecallAsk } from "../../src/thread/types";
import { unique } from "./support";
import { estimateTokens } from "../../src/core/tokens";

const estimate = (content: string) => estimateTokens({ role: "user", content });

/**
 * Recall of earlier turns inside a real thread object's SQLite: the index follows every write
 * (append, replace, remove, remove_all, fork), recalls the current branch only, brings
 * neighbours, never splits a tool-call pair and stays within the budget.
 */

type Storage = DurableObjectStorage;

async function withStore<T>(fn: (store: ThreadStore, storage: Storage) => T | Promise<T>): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique("recall")));
  return runInDurableObject(stub, async (_live, state) => {
    await state.storage.deleteAll();
    return fn(ThreadStore.of(state.storage), state.storage);
  });
}

/** New messages wait for the recall index (recall-index.ts, v10); tests of the index's own queries bring them in first, as a recall does. */
const indexed = (storage: Storage) => storage.transactionSync(() => indexWaiting(storage.sql));

const ask = (query: string, share = 0.75, neighbours = 1): RecallAsk => ({ query, share, neighbours });
const recall = (store: ThreadStore, budget: number, a: RecallAsk) => store.recent(budget, { recall: a });
const ids = (r: LoadRecentResult) => (r.recalled ?? []).map((t) => t.message.id);

/** Filler exchanges that share no content words with the planted turns. */
function filler(n: number, from = 0): MessageInput[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `f${from + i}`,
    role: i % 2 ? "assistant" : "user",
    content: `Routine chat ${from + i}: the weather stays mild and the office plants are watered.`,
  }));
}

const planted: MessageInput[] = [
  { id: "q1", role: "user", content: "By the way, where did you park the blue bicycle?" },
  { id: "a1", role: "assistant", content: "Behind the library, next to the old fountain." },
];

describe("recall index and recall inside the thread object", () => {
  it("a planted early turn comes back with its answer (the next turn) for the question that needs it, not for an unrelated one", async () => {
    await withStore((store) => {
      store.update({ ops: [{ op: "append", messages: [...filler(10), ...planted, ...filler(200, 10)] }] }, "update");
      const hit = recall(store, 600, ask("Where is my bicycle?"));
      expect(ids(hit)).toEqual(expect.arrayContaining(["q1", "a1"]));
      expect(hit.recalled!.find((t) => t.message.id === "q1")).toMatchObject({ why: "match" });
      expect(hit.recalled!.find((t) => t.message.id === "a1")?.why).toBe("neighbour");
      // Conversation order, and the window is the newest messages, after every recalled one.
      expect(ids(hit).indexOf("a1")).toBe(ids(hit).indexOf("q1") + 1);
      expect(hit.messages.at(-1)?.id).toBe("f209");
      expect(hit.tokens + hit.recalled_tokens!).toBeLessThanOrEqual(600);
      expect(hit.recalled_tokens!).toBeGreaterThan(0);

      const miss = recall(store, 600, ask("Which trains leave early on Sundays?"));
      expect(ids(miss)).not.toContain("q1");
      expect(miss.recalled).toEqual([]);
      // Nothing matched: the whole budget is the newest window, as without recall.
      expect(miss.messages).toEqual(store.recent(600).messages);
    });
  });

  it("matches words across their forms (the index is stemmed)", async () => {
    await withStore((store) => {
      store.update(
        { ops: [{ op: "append", messages: [{ id: "p", role: "user", content: "I spent the weekend painting the fence." }, ...filler(100)] }] },
        "update",
      );
      expect(ids(recall(store, 300, ask("what did I paint?")))).toContain("p");
    });
  });

  it("the index follows replace, remove, remove_all and fork: removed or replaced text and the branch a fork left are never recalled", async () => {
    await withStore((store) => {
      const first = store.update({ ops: [{ op: "append", messages: [...filler(4), ...planted, ...filler(100, 4)] }] }, "update");
      expect(ids(recall(store, 400, ask("bicycle")))).toContain("q1");

      store.update({ ops: [{ op: "replace", message: { id: "q1", role: "user", content: "Where did you leave the red kayak?" } }] }, "update");
      expect(ids(recall(store, 400, ask("bicycle")))).not.toContain("q1");
      expect(ids(recall(store, 400, ask("kayak")))).toContain("q1");

      store.update({ ops: [{ op: "remove", id: "q1" }] }, "update");
      expect(ids(recall(store, 400, ask("kayak")))).toEqual([]);

      // A branch that says something else; forking back to the first checkpoint leaves it.
      store.update({ ops: [{ op: "append", messages: [{ id: "z", role: "user", content: "The zeppelin lands at noon." }, ...filler(100, 200)] }] }, "update");
      expect(ids(recall(store, 400, ask("zeppelin")))).toContain("z");
      store.fork(first.id);
      expect(ids(recall(store, 400, ask("zeppelin")))).toEqual([]);
      expect(ids(recall(store, 400, ask("bicycle")))).toContain("q1"); // the fork's branch has it again

      store.update({ ops: [{ op: "remove_all" }] }, "update");
      expect(recall(store, 400, ask("bicycle"))).toMatchObject({ messages: [], recalled: [] });
    });
  });

  it("what recall keeps of older rows between recalls follows every write: a replaced turn comes back as it now reads, a removed neighbour never", async () => {
    await withStore((store) => {
      const first = store.update({ ops: [{ op: "append", messages: [...filler(4), ...planted, ...filler(100, 4)] }] }, "update");
      const before = recall(store, 400, ask("bicycle"));
      expect(ids(before)).toEqual(expect.arrayContaining(["q1", "a1"]));
      // Appends keep what was read (older rows do not change): the same turns, decoded once.
      store.update({ ops: [{ op: "append", messages: filler(2, 500) }] }, "update");
      const again = recall(store, 400, ask("bicycle"));
      expect(again.recalled!.find((t) => t.message.id === "q1")!.message).toBe(before.recalled!.find((t) => t.message.id === "q1")!.message);

      const longer = "By the way, where did you park the blue bicycle? The one with the squeaky bell and the basket, I mean.";
      store.update({ ops: [{ op: "replace", message: { id: "q1", role: "user", content: longer } }] }, "update");
      const replaced = recall(store, 400, ask("bicycle")).recalled!.find((t) => t.message.id === "q1")!;
      expect(replaced.message.content).toBe(longer);
      expect(replaced.tokens).toBe(estimate(longer));

      store.update({ ops: [{ op: "remove", id: "a1" }] }, "update");
      const removed = recall(store, 400, ask("bicycle"));
      expect(ids(removed)).toContain("q1");
      expect(ids(removed)).not.toContain("a1");

      // A fork rebuilds the rows: the branch it returns to has a1 again, as it was.
      store.fork(first.id);
      const forked = recall(store, 400, ask("bicycle"));
      expect(ids(forked)).toEqual(expect.arrayContaining(["q1", "a1"]));
      expect(forked.recalled!.find((t) => t.message.id === "q1")!.message.content).toBe(planted[0]!.content);
    });
  });

  it("recall scored from what FTS5 said of each word before gives FTS5's own hits, in order and to the last bit, as the thread grows", async () => {
    await withStore((store, storage) => {
      // Fixed-seed text over a small vocabulary (stemmed forms, repeats, names in most rows), appended a turn at a time between queries.
      let seed = 21_2026;
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
      const vocab =
        "Caroline Melanie paint painted painting kayak lake garden gardens bicycle library fountain adoption support group camping trip pottery".split(" ");
      const text = (n: number) => Array.from({ length: n }, () => vocab[Math.floor(next() * vocab.length)]).join(" ");
      const line = (i: number): MessageInput => ({
        role: i % 2 ? "assistant" : "user",
        content: `${i % 2 ? "Melanie" : "Caroline"}: ${text(3 + Math.floor(next() * 12))}`,
      });
      store.update({ ops: [{ op: "append", messages: Array.from({ length: 300 }, (_, i) => line(i)) }] }, "update");
      indexed(storage);
      const scores = new RecallScores();
      let compared = 0;
      for (let q = 0; q < 60; q++) {
        const m = recallMatch(storage.sql, text(2 + (q % 5)));
        if (m === null) continue;
        const highest = storage.sql.exec<{ n: number }>(`SELECT MAX(seq) AS n FROM messages`).one().n;
        for (const [before, limit] of [
          [highest + 1, 128],
          [highest - 20, 40],
        ] as const) {
          const ours = scores.search(storage.sql, m, before, limit);
          expect(ours).not.toBeNull();
          expect(ours).toEqual(searchRecall(storage.sql, m, before, limit));
          compared += ours!.length;
        }
        store.update({ ops: [{ op: "append", messages: [line(2 * q), line(2 * q + 1)] }] }, "update");
        indexed(storage);
      }
      expect(compared).toBeGreaterThan(3000);
    });
  });

  it("what recall learnt of words' rows follows every write: after a replace, remove, remove_all or fork a store recalls as a fresh one does", async () => {
    await withStore((store, storage) => {
      const first = store.update({ ops: [{ op: "append", messages: [...filler(4), ...planted, ...filler(100, 4)] }] }, "update");
      const same = (query: string) => {
        const r = recall(store, 400, ask(query));
        // A store opened now over the same rows has learnt nothing yet: it asks FTS5 about every row.
        expect(r.recalled!.map((t) => [t.message.id, t.score])).toEqual(
          recall(ThreadStore.of(storage), 400, ask(query)).recalled!.map((t) => [t.message.id, t.score]),
        );
        return ids(r);
      };
      // Learnt: "kayak" holds no row, "bicycle" one.
      expect(same("kayak bicycle")).toContain("q1");
      store.update({ ops: [{ op: "replace", message: { id: "f2", role: "user", content: "The red kayak is in the shed, next to the bicycle." } }] }, "update");
      expect(same("kayak bicycle")).toContain("f2");
      store.update({ ops: [{ op: "remove", id: "q1" }] }, "update");
      expect(same("kayak bicycle")).not.toContain("q1");
      store.fork(first.id);
      expect(same("kayak bicycle")).not.toContain("f2");
      store.update(
        { ops: [{ op: "remove_all" }, { op: "append", messages: [{ id: "k", role: "user", content: "kayak kayak bicycle" }, ...filler(100, 300)] }] },
        "update",
      );
      expect(same("kayak bicycle")).toContain("k");
    });
  });

  it("turns appended after a recall are recalled as they were stored, at their own positions: as a fresh store recalls them", async () => {
    await withStore((store, storage) => {
      store.update({ ops: [{ op: "append", messages: [...filler(4), ...planted, ...filler(100, 4)] }] }, "update");
      expect(ids(recall(store, 400, ask("bicycle")))).toContain("q1");
      const what = (r: LoadRecentResult) => (r.recalled ?? []).map((t) => [t.message, t.tokens, t.score, t.why, t.group]);
      // Appends of one to five turns, each naming its own kayak, with a tool pair among them; then recall of every kayak so far.
      for (let k = 0; k < 12; k++) {
        const turns: MessageInput[] = Array.from({ length: 1 + (k % 5) }, (_, j) => ({
          id: `k${k}-${j}`,
          role: j % 2 ? "assistant" : "user",
          content: `kayak number ${k} ${j}: ${j % 2 ? "it is moored at the north pier" : "where is it moored"} ${"and the oars are in the shed ".repeat(1 + (j % 3))}`,
        }));
        if (k === 5)
          turns.push(
            {
              id: "call",
              role: "assistant",
              content: "kayak lookup",
              tool_calls: [{ id: "c1", type: "function", function: { name: "find", arguments: "{}" } }],
            },
            { id: "res", role: "tool", tool_call_id: "c1", content: "found" },
          );
        store.update({ ops: [{ op: "append", messages: [...turns, ...filler(30, 1000 + 30 * k)] }] }, "update");
        const r = recall(store, 600, ask(`kayak number ${k} moored pier`));
        expect(ids(r).some((id) => id.startsWith("k"))).toBe(true);
        expect(what(r)).toEqual(what(recall(ThreadStore.of(storage), 600, ask(`kayak number ${k} moored pier`))));
      }
    });
  });

  it("keeping appended turns for recall costs their save no statement: the INSERT reports the positions it gave them", async () => {
    const stub = env.THREADS.get(env.THREADS.idFromName(unique("recall")));
    await runInDurableObject(stub, async (_live, state) => {
      await state.storage.deleteAll();
      let statements = 0;
      const sql = state.storage.sql;
      const counted: SqlStorage = Object.assign(Object.create(sql), {
        exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]) => {
          statements++;
          return sql.exec<T>(query, ...bindings);
        },
      });
      const store = new ThreadStore(counted, { meta: openThreadMeta(state.storage), transaction: (fn) => state.storage.transactionSync(fn) });
      store.update({ ops: [{ op: "append", messages: [...filler(4), ...planted, ...filler(100, 4)] }] }, "update");
      store.recent(400);
      const save = (k: number) => {
        const before = statements;
        store.update(
          {
            ops: [
              {
                op: "append",
                messages: [
                  { id: `u${k}`, role: "user", content: `bicycle ${k}?` },
                  { id: `r${k}`, role: "assistant", content: `Parked ${k}.` },
                ],
              },
            ],
          },
          "update",
        );
        return statements - before;
      };
      const unkept = save(1);
      expect(ids(recall(store, 400, ask("bicycle")))).toContain("q1");
      expect(save(2)).toBe(unkept);
    });
  });

  it("never splits a tool-call pair: a recalled call comes with its results and a result with its call", async () => {
    await withStore((store) => {
      const call = {
        id: "call",
        role: "assistant" as const,
        content: "Let me look up the glacier permit.",
        tool_calls: [{ id: "c1", type: "function" as const, function: { name: "permits", arguments: "{}" } }],
      };
      const result = { id: "result", role: "tool" as const, tool_call_id: "c1", content: "permit 77 approved" };
      store.update(
        { ops: [{ op: "append", messages: [...filler(6), { id: "u", role: "user", content: "hello" }, call, result, ...filler(100, 6)] }] },
        "update",
      );
      const r = recall(store, 400, ask("glacier permit", 0.75, 0));
      expect(ids(r)).toEqual(expect.arrayContaining(["call", "result"]));
      const at = ids(r).indexOf("call");
      expect(ids(r)[at + 1]).toBe("result");
    });
  });

  it("works for one message, a thread of tool messages only, and a budget smaller than one turn", async () => {
    await withStore((store) => {
      store.update({ ops: [{ op: "append", messages: [{ id: "only", role: "user", content: "bicycle" }] }] }, "update");
      expect(recall(store, 100, ask("bicycle"))).toMatchObject({ recalled: [], truncated: false });
      expect(recall(store, 1, ask("bicycle"))).toMatchObject({ messages: [], recalled: [], truncated: true });
    });
    await withStore((store) => {
      // Only tool traffic: calls without text and their results.
      const tools = Array.from({ length: 25 }, (_, i) => [
        {
          id: `c${i}`,
          role: "assistant" as const,
          content: null,
          tool_calls: [{ id: `k${i}`, type: "function" as const, function: { name: "lookup", arguments: "{}" } }],
        },
        { id: `t${i}`, role: "tool" as const, tool_call_id: `k${i}`, content: `bicycle result ${i}` },
      ]).flat();
      store.update({ ops: [{ op: "append", messages: tools }] }, "update");
      const r = recall(store, 100, ask("bicycle"));
      expect(r.recalled).toEqual([]); // tool results are not indexed; they only come with their call
      expect(r.messages.length).toBeGreaterThan(0);
    });
  });

  it("any query text answers without an error: stopwords, punctuation, FTS syntax, unicode, 100 KB", async () => {
    await withStore(async (store) => {
      store.update({ ops: [{ op: "append", messages: [...planted, ...filler(60)] }] }, "update");
      for (const q of [
        "the of and is",
        "?!.,;",
        '"',
        "*",
        "NEAR(a b)",
        "-bicycle",
        "a:b",
        "bicycle*",
        "AND OR NOT",
        "Fahrrad 自転車 🚲",
        "x".repeat(100_000),
      ]) {
        expect(() => recall(store, 200, ask(q))).not.toThrow();
      }
      await fc.assert(
        fc.property(fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 40 })), (q) => {
          const r = recall(store, 200, ask(q));
          expect(r.tokens + r.recalled_tokens!).toBeLessThanOrEqual(200);
        }),
        { seed: 21_2026, numRuns: 100 },
      );
    });
  });

  it("in a large thread a word in most rows is left out of the search, and still searched when it is the only one", async () => {
    await withStore((store, storage) => {
      const rows = Array.from({ length: 1200 }, (_, i) => ({
        id: `r${i}`,
        role: i % 2 ? "assistant" : "user",
        content: `Caroline: update ${i} about the garden`,
      }));
      rows[40] = { id: "kayak", role: "user", content: "Caroline: the red kayak is in the shed" };
      for (let i = 0; i < rows.length; i += 1000) store.update({ ops: [{ op: "append", messages: rows.slice(i, i + 1000) as MessageInput[] }] }, "update");
      indexed(storage);
      expect(recallMatch(storage.sql, "Where is Caroline's kayak?")).toMatchObject({ rare: '"kayak"', common: null });
      expect(recallMatch(storage.sql, "Caroline")).toMatchObject({ rare: '"caroline"', common: null });
      expect(ids(recall(store, 400, ask("Where is Caroline's kayak?")))).toContain("kayak");
    });
  });

  it("in a large thread only rows holding a rare word are scored, each as an OR of every kept word scores it", async () => {
    await withStore((store, storage) => {
      // 6,000 rows: "garden" in a fifth of them (common, yet under the share left out), "kayak" in three.
      const rows = Array.from({ length: 6000 }, (_, i) => ({
        id: `r${i}`,
        role: i % 2 ? "assistant" : "user",
        content: i % 5 === 0 ? `note ${i}: the garden needs water` : `note ${i}: nothing much happened`,
      }));
      for (const [i, text] of [
        [100, "kayak garden"],
        [700, "kayak trip"],
        [1500, "kayak lake"],
      ] as const)
        rows[i] = { id: `k${i}`, role: "user", content: text };
      for (let i = 0; i < rows.length; i += 1000) store.update({ ops: [{ op: "append", messages: rows.slice(i, i + 1000) as MessageInput[] }] }, "update");
      indexed(storage);
      const m = recallMatch(storage.sql, "kayak garden");
      expect(m).toMatchObject({ rare: '"kayak"', common: '"garden"', words: { rare: ["kayak"], common: ["garden"] } });
      const hits = searchRecall(storage.sql, m!, 6001, 50);
      expect(hits.map((h) => h.seq).sort((a, b) => a - b)).toEqual([101, 701, 1501]);
      const full = new Map(
        storage.sql
          .exec<{ seq: number; rank: number }>(`SELECT rowid AS seq, rank FROM recall_fts WHERE recall_fts MATCH '"kayak" OR "garden"'`)
          .toArray()
          .map((r) => [r.seq, -r.rank]),
      );
      for (const h of hits) expect(h.score).toBeCloseTo(full.get(h.seq)!, 9);
      // Holding the common word too ranks higher, as in the one OR.
      expect(hits[0]!.seq).toBe(101);
      expect(ids(recall(store, 300, ask("kayak garden")))).toContain("k100");
      // The same split over a message list held in memory (a run's whole state): ranked by the live index.
      const held = store.state(null).channels.messages;
      const over = store.recallOver(held, 300, ask("kayak garden"));
      expect((over.recalled ?? []).map((t) => t.message.id)).toContain("k100");
    });
  });

  it("a word's count is remembered while the thread grows a little, and taken again once it has grown more", async () => {
    await withStore((store, storage) => {
      const add = (n: number, from: number, text: (i: number) => string) => {
        store.update({ ops: [{ op: "append", messages: Array.from({ length: n }, (_, i) => ({ role: "user", content: text(from + i) })) }] }, "update");
        indexed(storage);
      };
      // 6,000 rows: heron in 10, otter in 1,100 (more than the rows scored, under a quarter).
      for (let k = 0; k < 6; k++) add(1000, k * 1000, (i) => (i % 100 === 0 ? `heron sighting ${i}` : i % 5 === 1 ? `otter note ${i}` : `plain note ${i}`));
      const counts = new WordCounts();
      expect(recallMatch(storage.sql, "heron otter", counts)).toMatchObject({ rare: '"heron"', common: '"otter"' });
      // 500 heron rows more (under an eighth of the thread): the remembered count still serves.
      add(500, 6000, (i) => `heron again ${i}`);
      expect(counts.of(storage.sql, "heron", 6500, 1625)).toBe(60);
      // Past an eighth: counted again, and heron is now the common one.
      add(800, 6500, (i) => `heron again ${i}`);
      expect(recallMatch(storage.sql, "heron otter", counts)).toMatchObject({ rare: '"otter"', common: '"heron"' });
      expect(counts.of(storage.sql, "heron", 7300, 1826)).toBe(1360);
    });
  });

  it("a thread written before the index is indexed when its object migrates", async () => {
    await withStore((_store, storage) => {
      // Start again from the tables of schema version 4 with rows written then.
      storage.sql.exec("DROP TABLE recall_fts");
      for (const t of ["meta", "messages", "channels", "checkpoints", "writes"]) storage.sql.exec(`DROP TABLE IF EXISTS ${t}`);
      for (const t of storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray())
        storage.sql.exec(`DROP TABLE IF EXISTS "${t.name}"`);
      for (const ddl of MIGRATIONS.slice(0, 4).flat()) storage.sql.exec(ddl);
      storage.sql.exec(`INSERT INTO meta (key, value) VALUES ('schema_version', '4')`);
      const insert = (seq: number, id: string, role: string, content: string) =>
        storage.sql.exec(
          `INSERT INTO messages (seq, id, role, json, tokens, bytes, created_at) VALUES (?, ?, ?, ?, 20, 100, 1)`,
          seq,
          id,
          role,
          JSON.stringify({ id, role, content, created_at: 1 }),
        );
      insert(1, "old", "user", "The bicycle is behind the library.");
      for (let i = 2; i < 60; i++) insert(i, `n${i}`, i % 2 ? "assistant" : "user", "nothing here at all");
      const store = ThreadStore.of(storage);
      expect(ids(recall(store, 200, ask("bicycle")))).toContain("old");
    });
  });

  it("a thread indexed before v15 (marks split words) is indexed again: its Hindi word is recalled", async () => {
    await withStore((_store, storage) => {
      for (const t of storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray())
        storage.sql.exec(`DROP TABLE IF EXISTS "${t.name}"`);
      for (const ddl of MIGRATIONS.slice(0, 14).flat()) storage.sql.exec(ddl);
      storage.sql.exec(`INSERT INTO meta (key, value) VALUES ('schema_version', '14')`);
      for (let i = 1; i < 60; i++) {
        const content = i === 1 ? "रवि को हिन्दी संगीत पसंद है" : "nothing here at all";
        storage.sql.exec(
          `INSERT INTO messages (seq, id, role, json, tokens, bytes, created_at) VALUES (?, ?, ?, ?, 20, 100, 1)`,
          i,
          `n${i}`,
          i % 2 ? "user" : "assistant",
          JSON.stringify({ id: `n${i}`, role: i % 2 ? "user" : "assistant", content, created_at: 1 }),
        );
      }
      storage.transactionSync(() => indexWaiting(storage.sql));
      // At v14 the word is its consonants apart: ह, न, द.
      expect(storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM recall_fts WHERE recall_fts MATCH '"ह"'`).one().n).toBe(1);
      const store = ThreadStore.of(storage);
      expect(ids(recall(store, 200, ask("हिन्दी")))).toContain("n1");
      expect(storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM recall_fts WHERE recall_fts MATCH '"ह"'`).one().n).toBe(0);
    });
  });
});
