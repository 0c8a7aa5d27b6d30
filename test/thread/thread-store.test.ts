import { describe, expect, it } from "vitest";
import { IdGenerator } from "../../src/core/ids";
import { MIGRATIONS, SCHEMA_VERSION } from "../../src/thread/sql-schema";
import { DEFAULT_LIMITS, type StoreLimits, ThreadStore, toThreadState } from "../../src/thread/thread-store";
import { codeOfSync, withStorage } from "./support";

/**
 * ThreadStore directly, without RPC or the lease: a real SqlStorage (the SQLite of a
 * thread object, reached with runInDurableObject) and the store constructed over it.
 */

type Storage = DurableObjectStorage;

const storeOver = (storage: Storage, deps: { limits?: StoreLimits; now?: () => number; ids?: IdGenerator } = {}) => ThreadStore.of(storage, deps);

const tables = (storage: Storage) =>
  storage.sql
    .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name`)
    .toArray()
    .map((r) => r.name);
const schemaVersion = (storage: Storage) => storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'schema_version'`).one().value;
const count = (storage: Storage, table: string) => storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;

const texts = (store: ThreadStore, cp?: string) => store.statePage(cp).channels.messages.map((m) => m.content);

describe("ThreadStore over a real SqlStorage", () => {
  it("append: one checkpoint per update, ids increasing, parents linked, the head follows", () =>
    withStorage((storage) => {
      let clock = 1_000;
      const store = storeOver(storage, { now: () => clock });
      expect(store.headId()).toBeNull();
      const first = store.update({ ops: [{ op: "append", messages: [{ role: "user", content: "a" }] }] }, "input");
      clock = 2_000;
      const second = store.update(
        {
          ops: [
            { op: "append", messages: [{ role: "assistant", content: "b" }] },
            { op: "append", messages: [{ id: "mine", role: "user", content: "c" }] },
          ],
        },
        "loop",
      );
      expect(first).toMatchObject({ parent_id: null, step: 1, source: "input", created_at: 1_000 });
      expect(second).toMatchObject({ parent_id: first.id, step: 2, source: "loop", created_at: 2_000 });
      expect(second.id > first.id).toBe(true);
      expect(store.headId()).toBe(second.id);
      // The writes are the delta: one put per message, ids assigned where the caller gave none.
      expect(first.writes).toEqual([{ op: "put", message: { id: expect.any(String), role: "user", content: "a", created_at: 1_000 } }]);
      expect(second.writes.map((w) => (w.op === "put" ? w.message.id : w.op))).toEqual([expect.any(String), "mine"]);
      expect(texts(store)).toEqual(["a", "b", "c"]);
      expect(count(storage, "checkpoints")).toBe(2);
      expect(count(storage, "writes")).toBe(3);
    }));

  it("replace keeps a message's position and created_at; remove drops it; a failing op rolls the whole update back", () =>
    withStorage((storage) => {
      let clock = 10;
      const store = storeOver(storage, { now: () => clock });
      store.update({ ops: [{ op: "append", messages: ["x", "y", "z"].map((id) => ({ id, role: "user" as const, content: id })) }] }, "input");
      clock = 20;
      const replaced = store.update({ ops: [{ op: "replace", message: { id: "x", role: "user", content: "X" } }] }, "update");
      expect(replaced.writes).toEqual([{ op: "put", message: { id: "x", role: "user", content: "X", created_at: 10 } }]);
      store.update({ ops: [{ op: "remove", id: "y" }] }, "update");
      expect(texts(store)).toEqual(["X", "z"]);

      const head = store.headId();
      const before = store.statePage(null);
      // The append would succeed alone; the remove of an unknown id fails, and the append goes with it.
      expect(
        codeOfSync(() =>
          store.update(
            {
              ops: [
                { op: "append", messages: [{ role: "user", content: "lost" }] },
                { op: "remove", id: "nope" },
              ],
            },
            "update",
          ),
        ),
      ).toBe("BEM-031");
      expect(codeOfSync(() => store.update({ ops: [{ op: "replace", message: { id: "nope", role: "user", content: "?" } }] }, "update"))).toBe("BEM-031");
      expect(codeOfSync(() => store.update({ ops: [] }, "update"))).toBe("BEM-035");
      expect(codeOfSync(() => store.update({ ops: [{ op: "remove_all" }] }, "fork"))).toBe("BEM-035");
      expect(store.headId()).toBe(head);
      expect(store.statePage(null)).toEqual(before);
      expect(count(storage, "checkpoints")).toBe(3);
      expect(count(storage, "messages")).toBe(2);

      store.update({ ops: [{ op: "remove_all" }] }, "update");
      expect(texts(store)).toEqual([]);
    }));

  it("channels go through their reducer, fixed by the first write", () =>
    withStorage((storage) => {
      const store = storeOver(storage);
      store.update({ ops: [{ op: "set", channel: "todo", reducer: "append", value: [1] }] }, "loop");
      store.update(
        {
          ops: [
            { op: "set", channel: "todo", value: [2, 3] },
            { op: "set", channel: "profile", reducer: "merge", value: { a: 1 } },
          ],
        },
        "loop",
      );
      store.update({ ops: [{ op: "set", channel: "profile", value: { b: 2 } }] }, "loop");
      const state = store.statePage(null);
      expect(state.channels).toEqual({ messages: [], profile: { a: 1, b: 2 }, todo: [1, 2, 3] });
      expect(state.reducers).toEqual({ profile: "merge", todo: "append" });
      expect(codeOfSync(() => store.update({ ops: [{ op: "set", channel: "todo", reducer: "last_value", value: 1 }] }, "loop"))).toBe("BEM-037");
      expect(codeOfSync(() => store.update({ ops: [{ op: "set", channel: "profile", value: [1] }] }, "loop"))).toBe("BEM-035");
    }));

  it("history pages newest first; every checkpoint replays to the state it had as head; a fork branches from one", () =>
    withStorage((storage) => {
      const store = storeOver(storage);
      const heads: { id: string; state: ReturnType<ThreadStore["statePage"]> }[] = [];
      for (const content of ["one", "two", "three", "four"]) {
        const cp = store.update(
          {
            ops: [
              { op: "append", messages: [{ role: "user", content }] },
              { op: "set", channel: "last", value: content },
            ],
          },
          "input",
        );
        heads.push({ id: cp.id, state: store.statePage(null) });
      }
      for (const { id, state } of heads) {
        expect(store.statePage(id)).toEqual(state);
        expect(toThreadState(id, state.step, store.replay(id))).toEqual({ ...state, next_offset: undefined, checkpoint_id: id });
      }
      expect(codeOfSync(() => store.statePage("NOSUCHCHECKPOINT"))).toBe("BEM-032");

      const page1 = store.history({ limit: 3 });
      const page2 = store.history({ limit: 3, before: page1.next_before ?? undefined });
      expect([...page1.checkpoints, ...page2.checkpoints].map((c) => c.id)).toEqual(heads.map((h) => h.id).reverse());
      expect(page1.checkpoints.map((c) => c.is_head)).toEqual([true, false, false]);
      expect(page2.next_before).toBeNull();
      expect(page1.checkpoints[0]?.writes).toEqual([
        { op: "put", message: expect.objectContaining({ content: "four" }) },
        { op: "set", channel: "last", reducer: "last_value", value: "four" },
      ]);

      // Fork to the second checkpoint: the live tables become its state, the old branch stays in history.
      const target = heads[1]!;
      const forked = store.fork(target.id);
      expect(forked).toMatchObject({ parent_id: target.id, step: target.state.step + 1, source: "fork", writes: [] });
      expect(store.headId()).toBe(forked.id);
      expect(store.statePage(null)).toEqual({ ...target.state, checkpoint_id: forked.id, step: forked.step });
      expect(store.history({ limit: 100 }).checkpoints).toHaveLength(5);
      // The branch continues from there; the old head still replays to its own state.
      store.update({ ops: [{ op: "append", messages: [{ role: "user", content: "three'" }] }] }, "input");
      expect(texts(store)).toEqual(["one", "two", "three'"]);
      expect(store.statePage(heads[3]!.id)).toEqual(heads[3]!.state);
      expect(codeOfSync(() => store.fork("NOSUCHCHECKPOINT"))).toBe("BEM-032");
    }));

  it("recent reads only the newest window that fits, and reports how many rows it read", () =>
    withStorage((storage) => {
      const store = storeOver(storage);
      store.update(
        { ops: [{ op: "append", messages: Array.from({ length: 200 }, (_, i) => ({ role: "user" as const, content: `message ${i} `.repeat(5) })) }] },
        "input",
      );
      const r = store.recent(100);
      expect(r.truncated).toBe(true);
      expect(r.messages.length).toBeGreaterThan(0);
      expect(r.messages.at(-1)?.content).toBe("message 199 ".repeat(5));
      expect(r.tokens).toBeLessThanOrEqual(100);
      expect(store.lastScanRows).toBeLessThanOrEqual(r.messages.length + 2);
      expect(store.recent(1_000_000, { maxMessages: 3 }).messages.map((m) => m.content)).toEqual([197, 198, 199].map((i) => `message ${i} `.repeat(5)));
    }));

  it("limits: messages per thread, bytes per message, bytes per thread; over one, nothing is stored", () =>
    withStorage((storage) => {
      const store = storeOver(storage, { limits: { ...DEFAULT_LIMITS, threadMessages: 2, messageBytes: 200, threadBytes: 400 } });
      store.update({ ops: [{ op: "append", messages: [{ role: "user", content: "a" }] }] }, "input");
      const at = (content: string) => () => store.update({ ops: [{ op: "append", messages: [{ role: "user", content }] }] }, "input");
      expect(codeOfSync(at("x".repeat(300)))).toBe("BEM-033");
      expect(codeOfSync(() => store.update({ ops: [{ op: "set", channel: "big", value: "x".repeat(300) }] }, "loop"))).toBe("BEM-033");
      expect(
        codeOfSync(() => store.update({ ops: [{ op: "append", messages: ["b", "c"].map((content) => ({ role: "user" as const, content })) }] }, "input")),
      ).toBe("BEM-034");
      expect(
        codeOfSync(() =>
          store.update(
            {
              ops: [
                { op: "set", channel: "c1", value: "y".repeat(190) },
                { op: "set", channel: "c2", value: "y".repeat(190) },
              ],
            },
            "loop",
          ),
        ),
      ).toBe("BEM-097");
      expect(texts(store)).toEqual(["a"]);
      expect(store.statePage(null).reducers).toEqual({});
      expect(count(storage, "checkpoints")).toBe(1);
      expect(store.storedBytes()).toBe(storage.sql.exec<{ b: number }>(`SELECT SUM(bytes) AS b FROM messages`).one().b);
    }));

  it("reconcile finds a resent history (a store just opened: by the stored hashes)", () =>
    withStorage((storage) => {
      const store = storeOver(storage);
      const sent = [
        { role: "user" as const, content: "hi" },
        { role: "assistant" as const, content: "hello" },
      ];
      store.update({ ops: [{ op: "append", messages: sent }] }, "input");
      expect(store.reconcile([...sent, { role: "user" as const, content: "next" }])).toEqual({ matched: 2, append_from: 2, branch_from: null, reset: false });
    }));
});

describe("Thread object migrations (synchronous, when its meta rows are opened)", () => {
  it("creates the tables on empty storage; a second construction changes nothing and continues the head and the ids", () =>
    withStorage((storage) => {
      expect(tables(storage)).toEqual([]);
      const first = storeOver(storage);
      const created = tables(storage);
      expect(created).toEqual(expect.arrayContaining(["channels", "checkpoints", "messages", "meta", "writes", "lg_checkpoints"]));
      expect(schemaVersion(storage)).toBe(String(SCHEMA_VERSION));
      const cp = first.update({ ops: [{ op: "append", messages: [{ id: "m", role: "user", content: "kept" }] }] }, "input");
      const state = first.statePage(null);

      // A fresh generator, as after an eviction: the stored clock keeps the next id after the last one.
      const ids = new IdGenerator();
      const second = storeOver(storage, { ids, now: () => 0 });
      expect(tables(storage)).toEqual(created);
      expect(schemaVersion(storage)).toBe(String(SCHEMA_VERSION));
      expect(second.headId()).toBe(cp.id);
      expect(second.statePage(null)).toEqual(state);
      const next = second.update({ ops: [{ op: "append", messages: [{ role: "user", content: "after" }] }] }, "input");
      expect(next.parent_id).toBe(cp.id);
      expect(next.id > cp.id).toBe(true); // the clock stood still (now = 0), the ids did not go back
      expect(texts(second)).toEqual(["kept", "after"]);
    }));

  it("brings a thread at v13 (the LangGraph API's run records) up to v14: its recall vectors' tables are added", () =>
    withStorage((storage) => {
      for (const ddl of MIGRATIONS.slice(0, 13).flat()) storage.sql.exec(ddl);
      storage.sql.exec(`INSERT INTO meta (key, value) VALUES ('schema_version', '13')`);
      expect(tables(storage)).not.toContain("recall_vectors");
      storeOver(storage);
      expect(schemaVersion(storage)).toBe(String(SCHEMA_VERSION));
      expect(tables(storage)).toEqual(expect.arrayContaining(["recall_vectors", "recall_vectors_by"]));
    }));

  it("brings a version-2 thread up to date in place: old rows keep working (hashes computed when read)", () =>
    withStorage((storage) => {
      // A thread written before v3: the first two migrations' tables, one checkpoint, rows without hash/cp.
      for (const ddl of [...(MIGRATIONS[0] ?? []), ...(MIGRATIONS[1] ?? [])]) storage.sql.exec(ddl);
      storage.sql.exec(`INSERT INTO meta (key, value) VALUES ('schema_version', '2')`);
      const old = [
        { id: "o1", role: "user", content: "from before", created_at: 5 },
        { id: "o2", role: "assistant", content: "the upgrade", created_at: 5 },
      ] as const;
      for (const m of old) {
        storage.sql.exec(`INSERT INTO messages (id, role, json, tokens, bytes, created_at) VALUES (?, ?, ?, 4, 40, 5)`, m.id, m.role, JSON.stringify(m));
      }
      storage.sql.exec(`INSERT INTO checkpoints (id, parent_id, step, source, created_at) VALUES ('0000000001', NULL, 1, 'input', 5)`);
      for (const [i, m] of old.entries()) {
        storage.sql.exec(`INSERT INTO writes (checkpoint_id, idx, json) VALUES ('0000000001', ?, ?)`, i, JSON.stringify({ op: "put", message: m }));
      }
      storage.sql.exec(`INSERT INTO meta (key, value) VALUES ('head', ?)`, JSON.stringify({ id: "0000000001", step: 1, count: 2, clock: "5:0" }));

      const store = storeOver(storage);
      expect(schemaVersion(storage)).toBe(String(SCHEMA_VERSION));
      expect(storage.sql.exec(`SELECT hash, cp FROM messages ORDER BY seq`).toArray()).toEqual([
        { hash: null, cp: null },
        { hash: null, cp: null },
      ]);
      expect(store.statePage(null).channels.messages).toEqual(old);
      expect(store.statePage("0000000001").channels.messages).toEqual(old);
      expect(store.reconcile([...old, { role: "user" as const, content: "new" }])).toEqual({
        matched: 2,
        append_from: 2,
        branch_from: null,
        reset: false,
      });
      const cp = store.update({ ops: [{ op: "append", messages: [{ role: "user", content: "new" }] }] }, "input");
      expect(cp.parent_id).toBe("0000000001");
      expect(
        storeOver(storage)
          .statePage(null)
          .channels.messages.map((m) => m.content),
      ).toEqual(["from before", "the upgrade", "new"]);
    }));

  it("a stored row that does not decode fails loudly instead of passing on as the wrong type", () =>
    withStorage(async (storage) => {
      const store = storeOver(storage);
      store.update({ ops: [{ op: "append", messages: [{ id: "m", role: "user", content: "a" }] }] }, "input");
      storage.sql.exec(`UPDATE messages SET json = ? WHERE id = 'm'`, JSON.stringify({ id: "m", role: "robot", content: 1 }));
      expect(() => store.recent(1000)).toThrow();
      expect(() => store.statePage(null)).toThrow();
      storage.sql.exec(`UPDATE meta SET value = '{"id":1}' WHERE key = 'head'`);
      expect(() => storeOver(storage)).toThrow();
      await storage.deleteAll(); // leave no broken thread behind
    }));
  it("one update's messages and writes are stored in order, however large: small rows share a statement, rows past its size go alone", () =>
    withStorage((storage) => {
      const store = storeOver(storage);
      // Two rows of ~500 KB fill a multi-row statement (INSERT_BATCH_CHARS, json-batches.ts); quotes double in
      // JSON twice (the stored text, then the statement's array), so the 400 KB one is a statement of its own.
      const contents = ["a", "x".repeat(500_000), "b", '"'.repeat(400_000), "c", "y".repeat(500_000), "d", "é".repeat(200_000), "e"];
      const messages = contents.map((content, i) => ({ role: i % 2 ? "assistant" : "user", content, id: `m${i}` }) as const);
      const cp = store.update({ ops: [{ op: "append", messages: [...messages] }] }, "input");
      const again = storeOver(storage); // a new store reads SQLite, not the tail cache
      expect(texts(again)).toEqual(contents);
      expect(again.recent(10_000_000).messages.map((m) => m.id)).toEqual(messages.map((m) => m.id));
      const [entry] = again.history({ limit: 1 }).checkpoints;
      expect(entry!.id).toBe(cp.id);
      expect(entry!.writes.map((w) => (w.op === "put" ? w.message.content : w.op))).toEqual(contents);
      // A message sent twice in one update is stored once, as its second form (the first is replaced),
      // in SQLite and in the tail cache (built by this read) alike, and counted once.
      expect(store.recent(10_000_000).messages).toHaveLength(contents.length);
      store.update(
        {
          ops: [
            {
              op: "append",
              messages: [
                { role: "user", content: "first", id: "twice" },
                { role: "user", content: "second", id: "twice" },
              ],
            },
          ],
        },
        "input",
      );
      expect(texts(storeOver(storage)).slice(-1)).toEqual(["second"]);
      expect(
        store
          .recent(10_000_000)
          .messages.filter((m) => m.id === "twice")
          .map((m) => m.content),
      ).toEqual(["second"]);
      expect(count(storage, "messages")).toBe(contents.length + 1);
      const head = JSON.parse(storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'head'`).one().value) as { count: number };
      expect(head.count).toBe(contents.length + 1);
    }));

  it("a checkpoint stores each write as the JSON of the write it reports, and the live bytes as SQLite counts them", () =>
    withStorage((storage) => {
      const store = storeOver(storage);
      // Values whose JSON a careless re-encoding could change: integer-like keys, -0, a large number, a lone surrogate, a `__proto__` key.
      const tricky = JSON.parse('{"b":1,"2":[-0,1e21,"\\ud800","é"],"1":{"__proto__":{"x":1}},"a":null}') as unknown;
      const written = [
        store.update(
          {
            ops: [
              { op: "set", channel: "notes", value: tricky },
              { op: "append", messages: [{ role: "user", content: "é \ud83d\ude00" }] },
            ],
          },
          "update",
        ),
        store.update(
          {
            ops: [
              { op: "set", channel: "notes", value: { shorter: true } },
              { op: "set", channel: "log", value: ["a"], reducer: "append" },
            ],
          },
          "update",
        ),
        store.update(
          {
            ops: [
              { op: "set", channel: "log", value: ["b"] },
              { op: "set", channel: "notes", value: "x".repeat(3000) },
            ],
          },
          "update",
        ),
      ];
      for (const cp of written) {
        const rows = storage.sql.exec<{ json: string }>(`SELECT json FROM writes WHERE checkpoint_id = ? ORDER BY idx`, cp.id).toArray();
        expect(rows.map((r) => r.json)).toEqual(cp.writes.map((w) => JSON.stringify(w)));
      }
      expect(store.statePage(null).channels).toMatchObject({ log: ["a", "b"], notes: "x".repeat(3000) });
      const counted = storage.sql
        .exec<{ b: number }>(
          `SELECT (SELECT SUM(bytes) FROM messages) + (SELECT SUM(length(CAST(value AS BLOB)) + length(CAST(name AS BLOB))) FROM channels) AS b`,
        )
        .one().b;
      expect(store.storedBytes()).toBe(counted);
    }));
});
