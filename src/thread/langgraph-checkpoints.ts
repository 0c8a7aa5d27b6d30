import { z } from "@hono/zod-openapi";
import type { DeltaHistory, DeltaQuery, GetQuery, ListQuery, LgOp, StoredTuple, StoredWrite, Typed } from "./langgraph-checkpoint-types";

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

const COLS = `ns, id, parent_id, v, versions, type, body, body_chunks, meta_type, meta, meta_chunks`;
/** The `versions` column: channel → version, stored as strings (put() writes them so). */
const StoredVersions = z.record(z.string(), z.string());
const decodeVersions = (json: string): Record<string, string> => StoredVersions.parse(JSON.parse(json));
const bytes = (b: ArrayBuffer | null): Uint8Array => (b ? new Uint8Array(b) : new Uint8Array(0));
const ownerKey = (...parts: string[]) => JSON.stringify(parts);

export class LangGraphCheckpoints {
  constructor(
    private readonly storage: DurableObjectStorage,
    /** Values above this many bytes are chunked. */
    private readonly chunkBytes: number,
  ) {}

  private get sql(): SqlStorage {
    return this.storage.sql;
  }

  /** Applies puts and writes in order, atomically. `created`: the thread had no LangGraph checkpoint before. */
  apply(ops: LgOp[]): { created: boolean } {
    return this.storage.transactionSync(() => {
      const created = this.sql.exec(`SELECT 1 FROM lg_checkpoints LIMIT 1`).toArray().length === 0;
      for (const op of ops) {
        if (op.op === "put") this.put(op);
        else this.putWrites(op);
      }
      return { created: created && ops.some((o) => o.op === "put") };
    });
  }

  private put(op: Extract<LgOp, { op: "put" }>): void {
    for (const blob of op.blobs) {
      const version = String(blob.version);
      const exists = this.sql.exec(`SELECT 1 FROM lg_blobs WHERE ns = ? AND channel = ? AND version = ?`, op.ns, blob.channel, version).toArray().length > 0;
      if (exists) continue;
      const cell = this.store(ownerKey("b", op.ns, blob.channel, version), blob.value?.b ?? new Uint8Array(0));
      this.sql.exec(
        `INSERT INTO lg_blobs (ns, channel, version, type, value, chunks) VALUES (?, ?, ?, ?, ?, ?)`,
        op.ns,
        blob.channel,
        version,
        blob.value?.t ?? EMPTY,
        cell.value,
        cell.chunks,
      );
    }
    const versions = JSON.stringify(Object.fromEntries(Object.entries(op.versions).map(([k, v]) => [k, String(v)])));
    this.dropChunks(ownerKey("c", op.ns, op.id));
    this.dropChunks(ownerKey("m", op.ns, op.id));
    const body = this.store(ownerKey("c", op.ns, op.id), op.checkpoint.b);
    const meta = this.store(ownerKey("m", op.ns, op.id), op.metadata.b);
    this.sql.exec(
      `INSERT OR REPLACE INTO lg_checkpoints (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
    );
  }

  private putWrites(op: Extract<LgOp, { op: "writes" }>): void {
    for (const w of op.writes) {
      const key = [op.ns, op.checkpoint_id, op.task_id, w.idx] as const;
      const existing = this.sql.exec(`SELECT 1 FROM lg_writes WHERE ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = ?`, ...key).toArray().length > 0;
      if (existing && w.idx >= 0) continue; // regular writes: the first one wins
      const owner = ownerKey("w", op.ns, op.checkpoint_id, op.task_id, String(w.idx));
      if (existing) this.dropChunks(owner);
      const cell = this.store(owner, w.value.b);
      this.sql.exec(
        `INSERT OR REPLACE INTO lg_writes (ns, checkpoint_id, task_id, idx, task_path, channel, type, value, chunks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ...key,
        op.task_path,
        w.channel,
        w.value.t,
        cell.value,
        cell.chunks,
      );
    }
  }

  /** The checkpoint with this id, or the latest (highest id) of the namespace. */
  get(q: GetQuery): { tuple: StoredTuple; history?: DeltaHistory } | null {
    const row = q.checkpoint_id
      ? this.sql.exec<CheckpointRow>(`SELECT ${COLS} FROM lg_checkpoints WHERE ns = ? AND id = ?`, q.ns, q.checkpoint_id).toArray()[0]
      : this.sql.exec<CheckpointRow>(`SELECT ${COLS} FROM lg_checkpoints WHERE ns = ? ORDER BY id DESC LIMIT 1`, q.ns).toArray()[0];
    if (!row) return null;
    const tuple = this.tuple(row);
    if (!q.delta_channels?.length) return { tuple };
    return { tuple, history: this.deltaHistory({ ns: q.ns, checkpoint_id: row.id, channels: q.delta_channels }) };
  }

  /** Newest first; `filter` matches metadata keys by equality (as MemorySaver does). */
  list(q: ListQuery): StoredTuple[] {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (q.ns !== undefined) where.push(`ns = ?`), args.push(q.ns);
    if (q.checkpoint_id !== undefined) where.push(`id = ?`), args.push(q.checkpoint_id);
    if (q.before !== undefined) where.push(`id < ?`), args.push(q.before);
    const rows = this.sql.exec<CheckpointRow>(
      `SELECT ${COLS} FROM lg_checkpoints ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC, ns`,
      ...args,
    );
    const out: StoredTuple[] = [];
    const filter = Object.entries(q.filter ?? {});
    for (const row of rows) {
      if (q.limit !== undefined && out.length >= q.limit) break;
      if (filter.length > 0 && !matches(this.read(ownerKey("m", row.ns, row.id), row.meta, row.meta_chunks), row.meta_type, filter)) continue;
      out.push(this.tuple(row));
    }
    return out;
  }

  /**
   * The DeltaChannel walk (BaseCheckpointSaver.getDeltaChannelHistory), done here
   * so it costs one round trip: from the checkpoint's parent up the parent chain,
   * collecting each channel's writes until an ancestor holds a stored value
   * for it (the seed). Writes come back oldest first, each step in
   * (task_path, task_id, idx) order.
   */
  deltaHistory(q: DeltaQuery): DeltaHistory {
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
        if (remaining.has(w.channel)) collected.get(w.channel)!.push(w);
      }
      for (const ch of [...remaining]) {
        const version = versions[ch];
        if (version === undefined) continue;
        const blob = this.blob(q.ns, ch, version);
        if (blob) {
          seeds.set(ch, blob);
          remaining.delete(ch);
        }
      }
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
      return { existed };
    });
  }

  /** Stored bytes of the LangGraph tables (benchmarks). */
  storedBytes(): number {
    const q = (s: string) => Number(this.sql.exec<{ n: number | null }>(s).toArray()[0]?.n ?? 0);
    return (
      q(`SELECT SUM(LENGTH(body) + LENGTH(meta) + LENGTH(versions)) AS n FROM lg_checkpoints`) +
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

  private store(owner: string, data: Uint8Array): Cell {
    if (data.byteLength <= this.chunkBytes) return { value: data, chunks: 0 };
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
