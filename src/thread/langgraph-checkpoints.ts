import { z } from "@hono/zod-openapi";
import { CHECKPOINT_CLOCK_SKEW_MS, checkpointIdClock } from "../core/checkpoint-clock";
import { AppError } from "../core/errors";
import { deltaChannelsInMeta, refuseDeltaCounters } from "./langgraph-delta-meta";
import { refuseInsertion, refuseOrphanWrites, refuseOwnReplace, refuseSpecialReplace, refuseWritesOnHistory } from "./langgraph-order";
import type { KeptMetaKey, ThreadMeta } from "./meta";
import type {
  DeltaHistory,
  DeltaQuery,
  GetQuery,
  Head,
  ListQuery,
  LgOp,
  PruneQuery,
  StoredTuple,
  StoredWrite,
  TuplePage,
  Typed,
  Writer,
} from "./langgraph-checkpoint-types";

/**
 * LangGraph checkpoints of one thread, in the thread's Durable Object (its own
 * tables, beside edgeweave's checkpoints; the two models do not mix).
 *
 * - lg_checkpoints: one row per checkpoint (the checkpoint without channel_values,
 *   its metadata, parent and channel versions).
 * - lg_blobs: one row per (ns, channel, version), written once (insert-if-absent),
 *   so a step stores only the channels it changed. A checkpoint's values are its
 *   versions joined to these rows.
 * - lg_writes: pending writes per (ns, checkpoint, task, idx): regular writes are
 *   first-wins, special channels (negative idx) replace.
 * - lg_chunks: values larger than the row threshold, split (production refuses
 *   rows over 2 MB; workerd does not enforce that locally, so tests lower it).
 */
export const LANGGRAPH_DDL: readonly string[] = [
  `CREATE TABLE lg_checkpoints (
     ns TEXT NOT NULL, id TEXT NOT NULL, parent_id TEXT, v INTEGER NOT NULL,
     versions TEXT NOT NULL, type TEXT NOT NULL, body BLOB, body_chunks INTEGER NOT NULL DEFAULT 0,
     meta_type TEXT NOT NULL, meta BLOB, meta_chunks INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (ns, id)
   )`,
  `CREATE TABLE lg_blobs (
     ns TEXT NOT NULL, channel TEXT NOT NULL, version TEXT NOT NULL,
     type TEXT NOT NULL, value BLOB, chunks INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (ns, channel, version)
   )`,
  `CREATE TABLE lg_writes (
     ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL,
     task_path TEXT NOT NULL, channel TEXT NOT NULL, type TEXT NOT NULL, value BLOB, chunks INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (ns, checkpoint_id, task_id, idx)
   )`,
  `CREATE INDEX lg_writes_order ON lg_writes (ns, checkpoint_id, task_path, task_id, idx)`,
  `CREATE TABLE lg_chunks (owner TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (owner, seq))`,
];

/**
 * Schema v6: the key that wrote each checkpoint and pending write, so replacing what another
 * key wrote can be told from a key retrying its own write (NULL: written before v5, by nobody known).
 */
export const LANGGRAPH_WRITER_DDL: readonly string[] = [`ALTER TABLE lg_checkpoints ADD COLUMN writer TEXT`, `ALTER TABLE lg_writes ADD COLUMN writer TEXT`];

/** Schema v11: children by parent, for the checks that ask whether a checkpoint has been continued (langgraph-order.ts). */
export const LANGGRAPH_CHILDREN_DDL: readonly string[] = [`CREATE INDEX lg_checkpoints_children ON lg_checkpoints (ns, parent_id)`];

/**
 * Schema v12: the key that wrote each channel value. A value is stored once per (ns, channel, version) and every
 * checkpoint naming that version reads it, so a key that wrote a version first, ahead of another key's checkpoint
 * naming it, chose what that checkpoint reads. Now another key's value of a version with other content is
 * refused to a key without `rewrite_thread` (NULL: written before v12, by nobody known).
 */
export const LANGGRAPH_BLOB_WRITER_DDL: readonly string[] = [`ALTER TABLE lg_blobs ADD COLUMN writer TEXT`];

/**
 * Bytes one RPC or response carries at most (a page of tuples, or a delta walk): well under
 * Workers RPC's 32 MiB, and a tuple is at most MAX_THREAD_BYTES (16 MiB by default), so a page
 * that must hold one oversized tuple still fits.
 */
export const LG_PAGE_BYTES = 4 * 1024 * 1024;
const LG_RPC_BYTES = 24 * 1024 * 1024;

/**
 * Bytes of a checkpoint's `versions` (every channel of the graph → its version) in its row. Production
 * SQLite refuses a row over 2 MB, and the row holds the versions, which are not chunked (every read joins
 * by them), beside the body and metadata, which stay inline only while all three fit one chunk
 * (LANGGRAPH_CHUNK_BYTES, 1.9 MB). 1 MiB is ~15,000 channels at the saver's 49-character versions, above
 * the ~14,000 changed channels one request's MAX_LANGGRAPH_JSON_ITEMS carry; past it 413 BEM-147 (the item
 * cap alone does not bound it: one versions key may be a long name, and unchanged channels come without blobs).
 */
export const MAX_VERSIONS_BYTES = 1024 * 1024;

/** The caps apply() enforces, as for edgeweave's own turns: MAX_THREAD_BYTES and MAX_THREAD_HISTORY_BYTES. */
export type LangGraphLimits = { threadBytes: number; historyBytes: number };

/** Stored bytes of one value: inline, or split into lg_chunks rows under `owner`. */
type Cell = { value: Uint8Array | null; chunks: number };

const TASKS = "__pregel_tasks";
/** An empty channel at a version (stored so the version is known, never returned as a value). */
const EMPTY = "empty";

type CheckpointRow = {
  ns: string;
  id: string;
  parent_id: string | null;
  v: number;
  versions: string;
  type: string;
  body: ArrayBuffer | null;
  body_chunks: number;
  meta_type: string;
  meta: ArrayBuffer | null;
  meta_chunks: number;
};
type WriteRow = { task_id: string; idx: number; channel: string; type: string; value: ArrayBuffer | null; chunks: number };
type Put = Extract<LgOp, { op: "put" }>;
type Writes = Extract<LgOp, { op: "writes" }>;

const COLS = `ns, id, parent_id, v, versions, type, body, body_chunks, meta_type, meta, meta_chunks`;
/** The `versions` column: channel → version, stored as strings (put() writes them so). */
const StoredVersions = z.record(z.string(), z.string());
const decodeVersions = (json: string): Record<string, string> => StoredVersions.parse(JSON.parse(json));
const bytes = (b: ArrayBuffer | null): Uint8Array => (b ? new Uint8Array(b) : new Uint8Array(0));
const storedVersions = (op: Put): string => JSON.stringify(Object.fromEntries(Object.entries(op.versions).map(([k, v]) => [k, String(v)])));
const ownerKey = (...parts: string[]) => JSON.stringify(parts);

export class LangGraphCheckpoints {
  /** Bytes the ops of the current apply() add (net of what they replace). */
  private added = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    /** The object's meta rows: the running total of this capability's bytes is kept there. */
    private readonly meta: ThreadMeta,
    /** Values above this many bytes are chunked. */
    private readonly chunkBytes: number,
    private readonly limits: LangGraphLimits = { threadBytes: Number.MAX_SAFE_INTEGER, historyBytes: Number.MAX_SAFE_INTEGER },
  ) {}

  private get sql(): SqlStorage {
    return this.storage.sql;
  }

  /**
   * Applies puts and writes in order, atomically.
   * Writing new checkpoints (after the namespace's newest) and writes is a run; replacing a checkpoint
   * (same id), placing a new one below the newest (langgraph-order.ts) or replacing a special pending
   * write that another key wrote rewrites history, which needs `writer.rewrite` (BEM-022 otherwise).
   * Past MAX_THREAD_HISTORY_BYTES (everything stored, 413 BEM-019) or a checkpoint's values and
   * writes past MAX_THREAD_BYTES (413 BEM-097), nothing of the batch is stored.
   */
  apply(ops: LgOp[], writer: Writer): void {
    this.storage.transactionSync(() => {
      const held = this.heldBytes();
      this.added = 0;
      const touched = new Map<string, Head>();
      for (const op of ops) {
        if (op.op === "put") this.put(op, writer);
        else this.putWrites(op, writer);
        const head = op.op === "put" ? { ns: op.ns, id: op.id } : { ns: op.ns, id: op.checkpoint_id };
        touched.set(ownerKey(head.ns, head.id), head);
      }
      if (this.added > 0 && held + this.added > this.limits.historyBytes) {
        throw new AppError(
          "BEM-019",
          `The thread's LangGraph checkpoints would hold ${held + this.added} bytes; the limit is ${this.limits.historyBytes} (MAX_THREAD_HISTORY_BYTES). Prune old checkpoints (POST /v1/langgraph/threads/{thread_id}/prune, or EdgeweaveSaver.prune) or delete the thread.`,
        );
      }
      for (const head of touched.values()) {
        const size = this.tupleBytes(head);
        if (size > this.limits.threadBytes) {
          throw new AppError(
            "BEM-097",
            `Checkpoint '${head.id}' would hold ${size} bytes of channel values and pending writes; the limit is ${this.limits.threadBytes} (MAX_THREAD_BYTES)`,
          );
        }
      }
      this.setHeldBytes(held + this.added);
    });
  }

  /** Whether these ops would give a thread with no LangGraph checkpoint its first (the thread's LangGraph side is created). */
  creates(ops: LgOp[]): boolean {
    return ops.some((o) => o.op === "put") && this.sql.exec(`SELECT 1 FROM lg_checkpoints LIMIT 1`).toArray().length === 0;
  }

  private put(op: Put, writer: Writer): void {
    refuseDeltaCounters(op.id, op.metadata);
    const old = this.sql
      .exec<{ writer: string | null; body: number | null; body_chunks: number; meta: number | null; meta_chunks: number; versions: number }>(
        `SELECT writer, LENGTH(body) AS body, body_chunks, LENGTH(meta) AS meta, meta_chunks, LENGTH(CAST(versions AS BLOB)) AS versions FROM lg_checkpoints WHERE ns = ? AND id = ?`,
        op.ns,
        op.id,
      )
      .toArray()[0];
    if (old) {
      if (old.writer !== writer.key && !writer.rewrite.allowed) {
        throw new AppError("BEM-022", `${writer.rewrite.message}: checkpoint '${op.id}' exists, written by another key (write a new checkpoint id instead)`);
      }
      refuseOwnReplace(this.sql, op, writer, () => this.samePut(op));
      this.added -=
        this.cellBytes(ownerKey("c", op.ns, op.id), old.body, old.body_chunks) +
        this.cellBytes(ownerKey("m", op.ns, op.id), old.meta, old.meta_chunks) +
        old.versions;
    } else refuseInsertion(this.sql, op, writer);
    for (const blob of op.blobs) {
      const version = String(blob.version);
      const stored = this.sql
        .exec<{ writer: string | null; value: number | null; chunks: number }>(
          `SELECT writer, LENGTH(value) AS value, chunks FROM lg_blobs WHERE ns = ? AND channel = ? AND version = ?`,
          op.ns,
          blob.channel,
          version,
        )
        .toArray()[0];
      if (stored && (stored.writer === writer.key || this.sameBlob(op.ns, blob))) continue; // written once: first wins
      const owner = ownerKey("b", op.ns, blob.channel, version);
      if (stored) {
        // Another key's value of this version, with other content: a checkpoint naming the version would read it. Only
        // a key that may rewrite history replaces it (its own value wins); every other key must name a version of its own.
        if (!writer.rewrite.allowed) {
          throw new AppError(
            "BEM-022",
            `${writer.rewrite.message}: channel '${blob.channel.slice(0, 80)}' at version '${version.slice(0, 80)}' holds another key's value with other content (write a new version)`,
          );
        }
        this.added -= this.cellBytes(owner, stored.value, stored.chunks);
        this.dropChunks(owner);
        this.sql.exec(`DELETE FROM lg_blobs WHERE ns = ? AND channel = ? AND version = ?`, op.ns, blob.channel, version);
      }
      const cell = this.store(owner, blob.value?.b ?? new Uint8Array(0));
      this.sql.exec(
        `INSERT INTO lg_blobs (ns, channel, version, type, value, chunks, writer) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        op.ns,
        blob.channel,
        version,
        blob.value?.t ?? EMPTY,
        cell.value,
        cell.chunks,
        writer.key,
      );
    }
    const versions = storedVersions(op);
    const versionsBytes = encoder.encode(versions).byteLength;
    if (versionsBytes > MAX_VERSIONS_BYTES) {
      throw new AppError(
        "BEM-147",
        `Checkpoint '${op.id}' names ${Object.keys(op.versions).length} channel versions in ${versionsBytes} bytes; one checkpoint row holds at most ${MAX_VERSIONS_BYTES} (MAX_VERSIONS_BYTES)`,
      );
    }
    this.dropChunks(ownerKey("c", op.ns, op.id));
    this.dropChunks(ownerKey("m", op.ns, op.id));
    // One row: the body and metadata inline only as far as they fit one chunk beside the versions.
    const body = this.store(ownerKey("c", op.ns, op.id), op.checkpoint.b, this.chunkBytes - versionsBytes);
    const meta = this.store(ownerKey("m", op.ns, op.id), op.metadata.b, this.chunkBytes - versionsBytes - (body.value?.byteLength ?? 0));
    // UTF-8 bytes, as the row holds them (string length undercounts non-ASCII channel names).
    this.added += versionsBytes;
    this.sql.exec(
      `INSERT OR REPLACE INTO lg_checkpoints (${COLS}, writer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      op.ns,
      op.id,
      op.parent_id,
      op.v,
      versions,
      op.checkpoint.t,
      body.value,
      body.chunks,
      op.metadata.t,
      meta.value,
      meta.chunks,
      writer.key,
    );
  }

  /**
   * Regular writes are first-wins. Special ones (negative idx: errors, interrupts, resumes)
   * replace, as in every LangGraph saver: while a step runs on a checkpoint nothing has continued,
   * that is LangGraph's own use (a task interrupted again, a resume resent), whoever wrote the
   * one before. On a continued checkpoint, replacing a special write and adding a new write
   * rewrite history (langgraph-order.ts: refuseSpecialReplace, refuseWritesOnHistory).
   */
  private putWrites(op: Writes, writer: Writer): void {
    let checked = false;
    for (const w of op.writes) {
      const key = [op.ns, op.checkpoint_id, op.task_id, w.idx] as const;
      const existing = this.sql
        .exec<{ writer: string | null; n: number | null; chunks: number }>(
          `SELECT writer, LENGTH(value) AS n, chunks FROM lg_writes WHERE ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = ?`,
          ...key,
        )
        .toArray()[0];
      if (existing && w.idx >= 0) continue; // regular writes: the first one wins
      const owner = ownerKey("w", op.ns, op.checkpoint_id, op.task_id, String(w.idx));
      if (!existing && !checked) {
        refuseWritesOnHistory(this.sql, op, writer);
        refuseOrphanWrites(this.sql, op, writer);
        checked = true;
      }
      if (existing) {
        refuseSpecialReplace(this.sql, { ...op, channel: w.channel, storedBy: existing.writer }, writer);
        this.added -= this.cellBytes(owner, existing.n, existing.chunks);
        this.dropChunks(owner);
      }
      const cell = this.store(owner, w.value.b);
      this.sql.exec(
        `INSERT OR REPLACE INTO lg_writes (ns, checkpoint_id, task_id, idx, task_path, channel, type, value, chunks, writer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ...key,
        op.task_path,
        w.channel,
        w.value.t,
        cell.value,
        cell.chunks,
        writer.key,
      );
    }
  }

  /** The stored checkpoint is exactly this put (a retried batch): parent, versions, serde types and bytes. */
  private samePut(op: Put): boolean {
    const row = this.sql.exec<CheckpointRow>(`SELECT ${COLS} FROM lg_checkpoints WHERE ns = ? AND id = ?`, op.ns, op.id).toArray()[0];
    if (!row || row.parent_id !== op.parent_id || row.v !== op.v || row.type !== op.checkpoint.t || row.meta_type !== op.metadata.t) return false;
    if (row.versions !== storedVersions(op)) return false;
    const same = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
    return (
      same(this.read(ownerKey("c", op.ns, op.id), row.body, row.body_chunks), op.checkpoint.b) &&
      same(this.read(ownerKey("m", op.ns, op.id), row.meta, row.meta_chunks), op.metadata.b)
    );
  }

  /** The checkpoint with this id, or the latest (highest id) of the namespace. */
  get(q: GetQuery): { tuple: StoredTuple; history?: DeltaHistory } | null {
    const row = q.checkpoint_id
      ? this.sql.exec<CheckpointRow>(`SELECT ${COLS} FROM lg_checkpoints WHERE ns = ? AND id = ?`, q.ns, q.checkpoint_id).toArray()[0]
      : this.sql.exec<CheckpointRow>(`SELECT ${COLS} FROM lg_checkpoints WHERE ns = ? ORDER BY id DESC LIMIT 1`, q.ns).toArray()[0];
    if (!row) return null;
    const tuple = this.tuple(row);
    if (!q.delta_channels?.length) return { tuple };
    // The walk comes along only while both fit one RPC; otherwise the client asks for it on its own.
    const history = this.walk({ ns: q.ns, checkpoint_id: row.id, channels: q.delta_channels }, LG_RPC_BYTES - sizeOfTuple(tuple));
    return history ? { tuple, history } : { tuple };
  }

  /**
   * Newest first; `filter` matches metadata keys by equality (as MemorySaver does). A page holds
   * up to `maxBytes` of tuples (at least one); `next_before` says where the next page starts.
   */
  list(q: ListQuery, maxBytes = LG_PAGE_BYTES): TuplePage {
    const out: StoredTuple[] = [];
    let bytes = 0;
    for (const row of this.rows(q)) {
      const t = this.tuple(row);
      const size = sizeOfTuple(t);
      if (out.length > 0 && bytes + size > maxBytes) return { tuples: out, next_before: out[out.length - 1]!.id };
      out.push(t);
      bytes += size;
    }
    return { tuples: out };
  }

  /** The ids list() would return, without their values (a cross-thread list picks its page from these). */
  heads(q: ListQuery): Head[] {
    return [...this.rows(q)].map((r) => ({ ns: r.ns, id: r.id }));
  }

  /** These checkpoints' tuples, in the order given, up to `maxBytes` (at least one when `atLeastOne`); missing ids are skipped. */
  tuples(heads: Head[], maxBytes: number, atLeastOne: boolean): StoredTuple[] {
    const out: StoredTuple[] = [];
    let bytes = 0;
    for (const h of heads) {
      const row = this.sql.exec<CheckpointRow>(`SELECT ${COLS} FROM lg_checkpoints WHERE ns = ? AND id = ?`, h.ns, h.id).toArray()[0];
      if (!row) continue;
      const t = this.tuple(row);
      const size = sizeOfTuple(t);
      if ((out.length > 0 || !atLeastOne) && bytes + size > maxBytes) break;
      out.push(t);
      bytes += size;
    }
    return out;
  }

  /** Checkpoint rows list() matches, newest first, up to `limit`. */
  private *rows(q: ListQuery): Generator<CheckpointRow> {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (q.ns !== undefined) where.push(`ns = ?`), args.push(q.ns);
    if (q.checkpoint_id !== undefined) where.push(`id = ?`), args.push(q.checkpoint_id);
    if (q.before !== undefined) where.push(`id < ?`), args.push(q.before);
    const rows = this.sql.exec<CheckpointRow>(
      `SELECT ${COLS} FROM lg_checkpoints ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC, ns`,
      ...args,
    );
    const filter = Object.entries(q.filter ?? {});
    let n = 0;
    for (const row of rows) {
      if (q.limit !== undefined && n >= q.limit) return;
      if (filter.length > 0 && !matches(this.read(ownerKey("m", row.ns, row.id), row.meta, row.meta_chunks), row.meta_type, filter)) continue;
      n++;
      yield row;
    }
  }

  /**
   * The DeltaChannel walk (BaseCheckpointSaver.getDeltaChannelHistory), done here
   * so it costs one round trip: from the checkpoint's parent up the parent chain,
   * collecting each channel's writes until an ancestor holds a stored value
   * for it (the seed). Writes come back oldest first, each step in
   * (task_path, task_id, idx) order.
   */
  deltaHistory(q: DeltaQuery): DeltaHistory {
    const history = this.walk(q, LG_RPC_BYTES);
    if (!history) {
      throw new AppError(
        "BEM-145",
        `The delta history of ${JSON.stringify(q.channels)} holds more than ${LG_RPC_BYTES} bytes; prune old checkpoints or snapshot the channel more often`,
      );
    }
    return history;
  }

  /** The walk of deltaHistory(), or null once what it collects passes `maxBytes`. */
  private walk(q: DeltaQuery, maxBytes: number): DeltaHistory | null {
    let bytes = 0;
    const start = q.checkpoint_id
      ? this.sql.exec<{ parent_id: string | null }>(`SELECT parent_id FROM lg_checkpoints WHERE ns = ? AND id = ?`, q.ns, q.checkpoint_id).toArray()[0]
      : this.sql.exec<{ parent_id: string | null }>(`SELECT parent_id FROM lg_checkpoints WHERE ns = ? ORDER BY id DESC LIMIT 1`, q.ns).toArray()[0];
    const remaining = new Set(q.channels);
    const collected = new Map<string, StoredWrite[]>(q.channels.map((c) => [c, []]));
    const seeds = new Map<string, Typed>();
    let current = start?.parent_id ?? null;
    while (current !== null && remaining.size > 0) {
      const row = this.sql
        .exec<{ parent_id: string | null; versions: string }>(`SELECT parent_id, versions FROM lg_checkpoints WHERE ns = ? AND id = ?`, q.ns, current)
        .toArray()[0];
      if (!row) break;
      const versions = decodeVersions(row.versions);
      const stepWrites = this.writesOf(q.ns, current);
      for (let i = stepWrites.length - 1; i >= 0; i--) {
        const w = stepWrites[i]!;
        if (!remaining.has(w.channel)) continue;
        collected.get(w.channel)!.push(w);
        bytes += w.value.b.byteLength;
      }
      for (const ch of [...remaining]) {
        const version = versions[ch];
        if (version === undefined) continue;
        const blob = this.blob(q.ns, ch, version);
        if (blob) {
          seeds.set(ch, blob);
          remaining.delete(ch);
          bytes += blob.b.byteLength;
        }
      }
      if (bytes > maxBytes) return null;
      current = row.parent_id;
    }
    const out: DeltaHistory = {};
    for (const ch of q.channels) {
      const entry: DeltaHistory[string] = { writes: collected.get(ch)!.reverse() };
      const seed = seeds.get(ch);
      if (seed) entry.seed = seed;
      out[ch] = entry;
    }
    return out;
  }

  /** Removes every LangGraph row of the thread (edgeweave's own tables are untouched). */
  deleteAll(): { existed: boolean } {
    return this.storage.transactionSync(() => {
      const existed =
        this.sql.exec(`SELECT 1 FROM lg_checkpoints LIMIT 1`).toArray().length > 0 || this.sql.exec(`SELECT 1 FROM lg_writes LIMIT 1`).toArray().length > 0;
      for (const t of ["lg_checkpoints", "lg_blobs", "lg_writes", "lg_chunks"]) this.sql.exec(`DELETE FROM ${t}`);
      this.meta.setValue(HELD_KEY, null);
      return { existed };
    });
  }

  /**
   * Deletes old checkpoints and leaves the thread resumable: in each namespace (or `q.ns`) the
   * newest `keep_last`, or those from `before` on, stay — and the newest checkpoint of every
   * namespace always does, with its pending writes, every value it references and, for the
   * `delta_channels` named, the ancestors their history walk needs. Pending writes of the deleted
   * checkpoints go with them, and values no kept checkpoint references. Their parents' ids stay
   * in the kept ones (a dangling parent reads as the start of history).
   */
  prune(q: PruneQuery): { deleted: number; kept: number } {
    return this.storage.transactionSync(() => {
      if (q.before !== undefined) {
        const found = this.sql
          .exec(`SELECT 1 FROM lg_checkpoints WHERE id = ?${q.ns === undefined ? "" : " AND ns = ?"}`, ...(q.ns === undefined ? [q.before] : [q.before, q.ns]))
          .toArray();
        if (found.length === 0) throw new AppError("BEM-032", `No LangGraph checkpoint '${q.before}' in this thread`);
      }
      const namespaces =
        q.ns !== undefined
          ? [q.ns]
          : this.sql
              .exec<{ ns: string }>(`SELECT DISTINCT ns FROM lg_checkpoints`)
              .toArray()
              .map((r) => r.ns);
      let deleted = 0;
      let kept = 0;
      for (const ns of namespaces) {
        const rows = this.sql
          .exec<{ id: string; parent_id: string | null; versions: string; body_chunks: number; meta_chunks: number }>(
            `SELECT id, parent_id, versions, body_chunks, meta_chunks FROM lg_checkpoints WHERE ns = ? ORDER BY id DESC`,
            ns,
          )
          .toArray();
        const keep = new Set(rows.filter((r, i) => i === 0 || (q.keep_last !== undefined ? i < q.keep_last : r.id >= q.before!)).map((r) => r.id));
        const delta = new Set([
          ...(q.delta_channels ?? []),
          ...this.deltaChannelsOf(
            ns,
            rows.find((r) => r.id === [...keep].at(-1)),
          ),
        ]);
        if (delta.size) for (const id of this.deltaAncestors(ns, rows, keep, [...delta])) keep.add(id);
        for (const r of rows) {
          if (keep.has(r.id)) continue;
          if (r.body_chunks > 0) this.dropChunks(ownerKey("c", ns, r.id));
          if (r.meta_chunks > 0) this.dropChunks(ownerKey("m", ns, r.id));
          this.dropWritesOf(ns, r.id);
          this.sql.exec(`DELETE FROM lg_checkpoints WHERE ns = ? AND id = ?`, ns, r.id);
          deleted++;
        }
        kept += keep.size;
        // Values are shared between checkpoints (one row per channel and version): drop those no kept checkpoint names.
        const referenced = new Set<string>();
        for (const r of rows) if (keep.has(r.id)) for (const [ch, v] of Object.entries(decodeVersions(r.versions))) referenced.add(ownerKey(ch, v));
        for (const b of this.sql
          .exec<{ channel: string; version: string; chunks: number }>(`SELECT channel, version, chunks FROM lg_blobs WHERE ns = ?`, ns)
          .toArray()) {
          if (referenced.has(ownerKey(b.channel, b.version))) continue;
          if (b.chunks > 0) this.dropChunks(ownerKey("b", ns, b.channel, b.version));
          this.sql.exec(`DELETE FROM lg_blobs WHERE ns = ? AND channel = ? AND version = ?`, ns, b.channel, b.version);
        }
      }
      this.dropOrphanWrites(q.ns);
      this.setHeldBytes(this.storedBytes());
      return { deleted, kept };
    });
  }

  /**
   * Pending writes whose checkpoint was never stored (langgraph-order.ts refuseOrphanWrites: a key without
   * `rewrite_thread` writes them only while its put can still come). Those of an id of the present (a time
   * UUID within CHECKPOINT_CLOCK_SKEW_MS of the clock: a put on its way) stay; the rest belong to no tuple
   * a read returns, so a prune, the way out of the byte caps, drops them.
   */
  private dropOrphanWrites(ns: string | undefined): void {
    const now = Date.now();
    const orphans = this.sql
      .exec<{ ns: string; checkpoint_id: string }>(
        `SELECT DISTINCT w.ns, w.checkpoint_id FROM lg_writes w
         WHERE ${ns === undefined ? "1" : "w.ns = ?"} AND NOT EXISTS (SELECT 1 FROM lg_checkpoints c WHERE c.ns = w.ns AND c.id = w.checkpoint_id)`,
        ...(ns === undefined ? [] : [ns]),
      )
      .toArray();
    for (const o of orphans) {
      const clock = checkpointIdClock(o.checkpoint_id);
      if (clock !== undefined && Math.abs(now - clock.ms) <= CHECKPOINT_CLOCK_SKEW_MS) continue;
      this.dropWritesOf(o.ns, o.checkpoint_id);
    }
  }

  /** Every pending write on `id`, with its chunks. */
  private dropWritesOf(ns: string, id: string): void {
    for (const w of this.sql
      .exec<{ task_id: string; idx: number }>(`SELECT task_id, idx FROM lg_writes WHERE ns = ? AND checkpoint_id = ? AND chunks > 0`, ns, id)
      .toArray()) {
      this.dropChunks(ownerKey("w", ns, id, w.task_id, String(w.idx)));
    }
    this.sql.exec(`DELETE FROM lg_writes WHERE ns = ? AND checkpoint_id = ?`, ns, id);
  }

  /**
   * The DeltaChannel channels a checkpoint counts toward its next snapshot: LangGraph keeps them in
   * the metadata's `counters_since_delta_snapshot`, so a prune knows them without the client naming them.
   */
  private deltaChannelsOf(ns: string, row: { id: string } | undefined): string[] {
    if (!row) return [];
    const meta = this.sql
      .exec<{ meta_type: string; meta: ArrayBuffer | null; meta_chunks: number }>(
        `SELECT meta_type, meta, meta_chunks FROM lg_checkpoints WHERE ns = ? AND id = ?`,
        ns,
        row.id,
      )
      .toArray()[0];
    if (meta?.meta_type !== "json") return [];
    return deltaChannelsInMeta({ t: meta.meta_type, b: this.read(ownerKey("m", ns, row.id), meta.meta, meta.meta_chunks) });
  }

  /** Ancestors of the oldest kept checkpoint that the delta walk of `channels` passes before it finds each one's seed. */
  private deltaAncestors(ns: string, rows: { id: string; parent_id: string | null; versions: string }[], keep: Set<string>, channels: string[]): string[] {
    const byId = new Map(rows.map((r) => [r.id, r]));
    const oldest = rows.filter((r) => keep.has(r.id)).at(-1);
    const remaining = new Set(channels);
    const out: string[] = [];
    for (let current = oldest?.parent_id ?? null; current !== null && remaining.size > 0; ) {
      const row = byId.get(current);
      if (!row) break;
      out.push(row.id);
      const versions = decodeVersions(row.versions);
      for (const ch of [...remaining]) {
        const version = versions[ch];
        if (version !== undefined && this.blob(ns, ch, version)) remaining.delete(ch);
      }
      current = row.parent_id;
    }
    return out;
  }

  /** What the thread's LangGraph rows hold (the running total; summed once for a thread older than it). */
  private heldBytes(): number {
    const held = this.meta.value(HELD_KEY);
    return held !== undefined ? Number(held) : this.storedBytes();
  }

  private setHeldBytes(n: number): void {
    this.meta.setValue(HELD_KEY, String(n));
  }

  /** A checkpoint's tuple size: its body, metadata, the values of its versions and its pending writes. */
  private tupleBytes(h: Head): number {
    const row = this.sql
      .exec<{ versions: string; body: number | null; body_chunks: number; meta: number | null; meta_chunks: number }>(
        `SELECT versions, LENGTH(body) AS body, body_chunks, LENGTH(meta) AS meta, meta_chunks FROM lg_checkpoints WHERE ns = ? AND id = ?`,
        h.ns,
        h.id,
      )
      .toArray()[0];
    let n = 0;
    if (row) {
      n += this.cellBytes(ownerKey("c", h.ns, h.id), row.body, row.body_chunks) + this.cellBytes(ownerKey("m", h.ns, h.id), row.meta, row.meta_chunks);
      for (const [ch, v] of Object.entries(decodeVersions(row.versions))) {
        const b = this.sql
          .exec<{ n: number | null; chunks: number }>(
            `SELECT LENGTH(value) AS n, chunks FROM lg_blobs WHERE ns = ? AND channel = ? AND version = ?`,
            h.ns,
            ch,
            v,
          )
          .toArray()[0];
        if (b) n += this.cellBytes(ownerKey("b", h.ns, ch, v), b.n, b.chunks);
      }
    }
    for (const w of this.sql
      .exec<{ task_id: string; idx: number; n: number | null; chunks: number }>(
        `SELECT task_id, idx, LENGTH(value) AS n, chunks FROM lg_writes WHERE ns = ? AND checkpoint_id = ?`,
        h.ns,
        h.id,
      )
      .toArray()) {
      n += this.cellBytes(ownerKey("w", h.ns, h.id, w.task_id, String(w.idx)), w.n, w.chunks);
    }
    return n;
  }

  /** Bytes of a stored value: inline, or the sum of its chunks. */
  private cellBytes(owner: string, inline: number | null, chunks: number): number {
    if (chunks === 0) return inline ?? 0;
    return Number(this.sql.exec<{ n: number | null }>(`SELECT SUM(LENGTH(data)) AS n FROM lg_chunks WHERE owner = ?`, owner).toArray()[0]?.n ?? 0);
  }

  /** Stored bytes of the LangGraph tables (benchmarks, and the running total's start). */
  storedBytes(): number {
    const q = (s: string) => Number(this.sql.exec<{ n: number | null }>(s).toArray()[0]?.n ?? 0);
    return (
      // Bytes, not characters, of the versions; a chunked body or metadata is NULL inline (its chunks are summed below).
      q(`SELECT SUM(COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(meta), 0) + LENGTH(CAST(versions AS BLOB))) AS n FROM lg_checkpoints`) +
      q(`SELECT SUM(LENGTH(value)) AS n FROM lg_blobs`) +
      q(`SELECT SUM(LENGTH(value)) AS n FROM lg_writes`) +
      q(`SELECT SUM(LENGTH(data)) AS n FROM lg_chunks`)
    );
  }

  private tuple(row: CheckpointRow): StoredTuple {
    const versions = decodeVersions(row.versions);
    const blobs: StoredTuple["blobs"] = [];
    for (const [channel, version] of Object.entries(versions)) {
      const value = this.blob(row.ns, channel, version);
      if (value) blobs.push({ channel, value });
    }
    const tuple: StoredTuple = {
      ns: row.ns,
      id: row.id,
      parent_id: row.parent_id,
      checkpoint: { t: row.type, b: this.read(ownerKey("c", row.ns, row.id), row.body, row.body_chunks) },
      metadata: { t: row.meta_type, b: this.read(ownerKey("m", row.ns, row.id), row.meta, row.meta_chunks) },
      blobs,
      writes: this.writesOf(row.ns, row.id),
    };
    if (row.v < 4 && row.parent_id !== null) {
      tuple.sends = this.writesOf(row.ns, row.parent_id)
        .filter((w) => w.channel === TASKS)
        .map((w) => w.value);
    }
    return tuple;
  }

  /** Whether the stored value of `blob`'s version is the same as `blob`'s (type and bytes). */
  private sameBlob(ns: string, blob: Put["blobs"][number]): boolean {
    const stored = this.blob(ns, blob.channel, String(blob.version));
    const sent = blob.value === null || blob.value.t === EMPTY ? null : blob.value;
    if (stored === null || sent === null) return stored === sent;
    return stored.t === sent.t && stored.b.byteLength === sent.b.byteLength && stored.b.every((x, i) => x === sent.b[i]);
  }

  private blob(ns: string, channel: string, version: string): Typed | null {
    const row = this.sql
      .exec<{ type: string; value: ArrayBuffer | null; chunks: number }>(
        `SELECT type, value, chunks FROM lg_blobs WHERE ns = ? AND channel = ? AND version = ?`,
        ns,
        channel,
        version,
      )
      .toArray()[0];
    if (!row || row.type === EMPTY) return null;
    return { t: row.type, b: this.read(ownerKey("b", ns, channel, version), row.value, row.chunks) };
  }

  /** SQLite's BINARY collation compares UTF-8 bytes, i.e. code points: the writesSortKey order. */
  private writesOf(ns: string, checkpointId: string): StoredWrite[] {
    return this.sql
      .exec<WriteRow>(
        `SELECT task_id, idx, channel, type, value, chunks FROM lg_writes WHERE ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx`,
        ns,
        checkpointId,
      )
      .toArray()
      .map((w) => ({
        task_id: w.task_id,
        channel: w.channel,
        value: { t: w.type, b: this.read(ownerKey("w", ns, checkpointId, w.task_id, String(w.idx)), w.value, w.chunks) },
      }));
  }

  /** `inline`: the most bytes the value may take in its own row (what the row's other columns leave). */
  private store(owner: string, data: Uint8Array, inline = this.chunkBytes): Cell {
    this.added += data.byteLength;
    if (data.byteLength <= Math.max(0, inline)) return { value: data, chunks: 0 };
    let seq = 0;
    for (let at = 0; at < data.byteLength; at += this.chunkBytes, seq++) {
      this.sql.exec(`INSERT INTO lg_chunks (owner, seq, data) VALUES (?, ?, ?)`, owner, seq, data.subarray(at, at + this.chunkBytes));
    }
    return { value: null, chunks: seq };
  }

  private read(owner: string, inline: ArrayBuffer | null, chunks: number): Uint8Array {
    if (chunks === 0) return bytes(inline);
    const parts = this.sql.exec<{ data: ArrayBuffer }>(`SELECT data FROM lg_chunks WHERE owner = ? ORDER BY seq`, owner).toArray();
    const out = new Uint8Array(parts.reduce((n, p) => n + p.data.byteLength, 0));
    let at = 0;
    for (const p of parts) {
      out.set(new Uint8Array(p.data), at);
      at += p.data.byteLength;
    }
    return out;
  }

  private dropChunks(owner: string): void {
    this.sql.exec(`DELETE FROM lg_chunks WHERE owner = ?`, owner);
  }
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const HELD_KEY: KeptMetaKey = "lg_bytes";

/** Bytes of a tuple's values (what a page of tuples is budgeted by). */
export const sizeOfTuple = (t: StoredTuple): number =>
  t.checkpoint.b.byteLength +
  t.metadata.b.byteLength +
  t.blobs.reduce((n, b) => n + b.value.b.byteLength, 0) +
  t.writes.reduce((n, w) => n + w.value.b.byteLength, 0) +
  (t.sends ?? []).reduce((n, s) => n + s.b.byteLength, 0);

/** Metadata of serde type "json" parsed; each filter key must equal (===, as MemorySaver) its value. */
function matches(meta: Uint8Array, type: string, filter: [string, unknown][]): boolean {
  if (type !== "json") return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(meta));
  } catch {
    return false;
  }
  if (typeof parsed !== "object" || parsed === null) return false;
  const record = new Map(Object.entries(parsed));
  return filter.every(([k, v]) => record.has(k) && sameJson(record.get(k), v));
}

function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}
