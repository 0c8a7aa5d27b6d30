import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { MessageInput } from "../../src/core/message";
import { searchTerms } from "../../src/core/search-terms";
import { EMBEDDED_TURNS, loadWordTable } from "../../src/embed/embedded";
import { embedWords, type WordTable } from "../../src/embed/word-table";
import { RecallVectors } from "../../src/thread/recall-vectors";
import { openThreadMeta } from "../../src/thread/sql-schema";
import { ThreadStore } from "../../src/thread/thread-store";
import { unique } from "../thread/support";
import { OTHER, planted } from "../support/by-meaning";

/**
 * Recall by meaning with the embedded default (src/embed, src/thread/recall-vectors.ts), offline:
 * turns that share no word with the question that needs them come back within 1,000 tokens from
 * a long thread of other talk, where full-text search alone finds nothing.
 */

/** A long thread of other talk with the planted turns spread through its first half. */
function thread(): MessageInput[] {
  const out: MessageInput[] = [];
  for (let i = 0; i < 400; i++) {
    const p = planted[(i - 40) / 40];
    out.push(
      p && Number.isInteger((i - 40) / 40)
        ? { id: `p${(i - 40) / 40}`, role: "user", content: p.turn }
        : { id: `o${i}`, role: i % 2 ? "assistant" : "user", content: `${OTHER[(i * 7) % OTHER.length]} (${i})` },
    );
  }
  return out;
}

let table: WordTable;
beforeAll(async () => {
  const t = await loadWordTable(env.ASSETS);
  if (!t) throw new Error("the word-vector table did not load");
  table = t;
});

async function withStore<T>(fn: (store: ThreadStore, storage: DurableObjectStorage) => T): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique("by-meaning")));
  return runInDurableObject(stub, async (_live, state) => {
    await state.storage.deleteAll();
    return fn(ThreadStore.of(state.storage, { embedder: EMBEDDED_TURNS }), state.storage);
  });
}

const recalledIds = (store: ThreadStore, query: string, channels?: ("full_text" | "dense")[]) =>
  (store.recent(1000, { recall: { query, share: 0.75, neighbours: 1, ...(channels ? { channels } : {}) } }).recalled ?? []).map((t) => t.message.id);

describe("recall by meaning (embedded default)", () => {
  it("the fixture's questions share no search word with the turns they need", () => {
    for (const p of planted) {
      const words = new Set(searchTerms(p.turn));
      expect(searchTerms(p.question).filter((w) => words.has(w))).toEqual([]);
    }
  });

  it("turns that share no word with their question come back within 1,000 tokens, at least three of four; full-text alone finds none", async () => {
    await withStore((store) => {
      store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
      const found = planted.filter((p, i) => recalledIds(store, p.question).includes(`p${i}`));
      expect(found.length).toBeGreaterThanOrEqual(3);
      expect(planted.filter((p, i) => recalledIds(store, p.question, ["full_text"]).includes(`p${i}`))).toEqual([]);
    });
  });

  it("a turn recalled by meaning reports its channels: its rank and score by meaning, and none by words", async () => {
    await withStore((store) => {
      store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
      const hits = planted.flatMap((p, i) =>
        (store.recent(1000, { recall: { query: p.question, share: 0.75, neighbours: 1 } }).recalled ?? []).filter((t) => t.message.id === `p${i}`),
      );
      // Two of the four are the dense channel's own first match; the others come as a neighbour of one, or not at all.
      const matches = hits.filter((h) => h.why === "match");
      expect(matches.length).toBeGreaterThanOrEqual(2);
      for (const hit of matches) {
        expect(hit.channels?.dense?.rank).toBeGreaterThanOrEqual(1);
        expect(hit.channels?.dense?.score).toBeGreaterThan(0);
        expect(hit.channels?.full_text).toBeUndefined();
      }
    });
  });

  it("any text embeds without an error: empty, punctuation, emoji, 100 KB, unknown words, another language", () => {
    const texts = [
      "",
      "?!...,;",
      "🎉🙂👍",
      "word ".repeat(20_000),
      "zzqxv blorptangle frobnicated",
      "Mi hermana llegó anoche desde Lisboa",
      "東京に行きました",
    ];
    for (const t of texts) {
      const v = embedWords(table, t);
      expect(v).toHaveLength(100);
      const n = Math.hypot(...v);
      // Unit length, or all zeros when no word is known.
      expect(n === 0 || Math.abs(n - 1) < 1e-5).toBe(true);
    }
    expect(Math.hypot(...embedWords(table, "?!...,;"))).toBe(0);
  });

  it("a query with no known word, or only punctuation, recalls by words alone or nothing, without an error", async () => {
    await withStore((store) => {
      store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
      for (const q of ["", "?!", "🎉", "zzqxv blorptangle", "東京"]) expect(() => recalledIds(store, q)).not.toThrow();
      expect(recalledIds(store, "?!")).toEqual([]);
    });
  });

  it("vectors follow every write: a replaced turn is found by its new meaning, a removed one never, and remove_all leaves none", async () => {
    await withStore((store, storage) => {
      const sql = storage.sql;
      const vectors = () => sql.exec<{ seq: number; vec: ArrayBuffer | null }>("SELECT seq, vec FROM recall_vectors ORDER BY seq").toArray();
      store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
      expect(recalledIds(store, "Is anyone unwell?")).toContain("p3");
      // Every indexed message has its vector once a recall has read them.
      expect(vectors().filter((v) => v.vec === null)).toEqual([]);
      expect(vectors()).toHaveLength(400);
      const matched = (query: string) =>
        (store.recent(1000, { recall: { query, share: 0.75, neighbours: 0 } }).recalled ?? []).filter((t) => t.why === "match").map((t) => t.message.id);
      expect(matched("Is anyone unwell?")).toContain("p3");
      store.update({ ops: [{ op: "replace", message: { id: "p3", role: "user", content: "We repainted the garage door blue last weekend." } }] }, "update");
      expect(matched("Is anyone unwell?")).not.toContain("p3");
      expect(vectors().filter((v) => v.vec === null)).toEqual([]);
      expect(matched("What pet does the family own?")).toContain("p2");
      store.update({ ops: [{ op: "remove", id: "p2" }] }, "update");
      expect(recalledIds(store, "What pet does the family own?")).not.toContain("p2");
      expect(vectors()).toHaveLength(399);
      store.update({ ops: [{ op: "remove_all" }] }, "update");
      expect(vectors()).toEqual([]);
    });
  });

  it("a recall with every row's vector made opens no transaction to fill them; rows that join the index later get theirs", async () => {
    await withStore((_store, storage) => {
      let transactions = 0;
      const store = new ThreadStore(storage.sql, {
        meta: openThreadMeta(storage),
        embedder: EMBEDDED_TURNS,
        transaction: (fn) => {
          transactions++;
          return storage.transactionSync(fn);
        },
      });
      store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
      expect(recalledIds(store, "Is anyone unwell?")).toContain("p3");
      const afterFill = transactions;
      expect(recalledIds(store, "Is anyone unwell?")).toContain("p3");
      expect(recalledIds(store, "What pet does the family own?")).toContain("p2");
      expect(transactions).toBe(afterFill);
      // A turn appended after the fill, pushed out of the window by later talk: found by meaning once it joins the
      // index (the newest of equal texts is the one recalled), whether the recall or the run's settle brings it in.
      const later = (from: number, n: number): MessageInput[] =>
        Array.from({ length: n }, (_, i) => ({
          id: `l${from + i}`,
          role: i % 2 ? "assistant" : "user",
          content: `${OTHER[(from + i) % OTHER.length]} (${from + i})`,
        }));
      store.update({ ops: [{ op: "append", messages: [{ id: "late3", role: "user", content: planted[3]!.turn }, ...later(0, 40)] }] }, "update");
      expect(recalledIds(store, "Is anyone unwell?")).toContain("late3");
      store.update({ ops: [{ op: "append", messages: [{ id: "late2", role: "user", content: planted[2]!.turn }, ...later(40, 40)] }] }, "update");
      store.settleRecallIndex();
      const settled = transactions;
      expect(recalledIds(store, "What pet does the family own?")).toContain("late2");
      expect(transactions).toBe(settled);
    });
  });

  it("of rows scoring alike the newest rank first, however many tie; rows from beforeSeq on are left out", async () => {
    await withStore((_store, storage) => {
      const sql = storage.sql;
      sql.exec("DROP TABLE IF EXISTS recall_vectors");
      sql.exec("CREATE TABLE recall_vectors (seq INTEGER PRIMARY KEY, vec BLOB)");
      // Odd rows point one way and even rows another, 600 of each: every odd row scores the same against the query.
      const vec = (x: number, y: number) => new Int8Array([x, y, 0, 0]).buffer;
      for (let seq = 1; seq <= 1200; seq++) sql.exec("INSERT INTO recall_vectors (seq, vec) VALUES (?, ?)", seq, seq % 2 ? vec(100, 0) : vec(0, 100));
      const q = new Float32Array([1, 0, 0, 0]);
      const hits = new RecallVectors(4).search(sql, { id: "test", dims: 4, embed: () => q }, "query", 1100, 5);
      expect(hits.map((h) => h.seq)).toEqual([1099, 1097, 1095, 1093, 1091]);
      expect(new Set(hits.map((h) => h.score)).size).toBe(1);
    });
  });

  it("vectors of another embedder are never compared: the thread's are embedded again", async () => {
    await withStore((_store, storage) => {
      const first = ThreadStore.of(storage, { embedder: { ...EMBEDDED_TURNS, id: "another-embedder" } });
      first.update({ ops: [{ op: "append", messages: thread() }] }, "update");
      recalledIds(first, "Is anyone unwell?");
      const by = () => storage.sql.exec<{ embedder: string }>("SELECT embedder FROM recall_vectors_by").one().embedder;
      expect(by()).toBe("another-embedder");
      const second = ThreadStore.of(storage, { embedder: EMBEDDED_TURNS });
      expect(recalledIds(second, "Is anyone unwell?")).toContain("p3");
      expect(by()).toBe(EMBEDDED_TURNS.id);
    });
  });

  it("recall over a run's whole state (middleware, a replayed branch) finds by meaning too, and only the list's own messages", async () => {
    await withStore((store) => {
      const messages = thread();
      store.update({ ops: [{ op: "append", messages }] }, "update");
      const stored = store.recent(Number.MAX_SAFE_INTEGER).messages;
      const over = (list: typeof stored, query: string, channels?: ("full_text" | "dense")[]) =>
        (store.recallOver(list, 1000, { query, share: 0.75, neighbours: 0, ...(channels ? { channels } : {}) }).recalled ?? []).map((t) => t.message.id);
      const found = planted.filter((p, i) => over(stored, p.question).includes(`p${i}`));
      expect(found.length).toBeGreaterThanOrEqual(2);
      expect(planted.filter((p, i) => over(stored, p.question, ["full_text"]).includes(`p${i}`))).toEqual([]);
      // A branch without the planted turn never recalls it.
      expect(
        over(
          stored.filter((m) => m.id !== "p3"),
          "Is anyone unwell?",
        ),
      ).not.toContain("p3");
    });
  });
});
