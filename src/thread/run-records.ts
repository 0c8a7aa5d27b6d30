import { z } from "@hono/zod-openapi";
import type { HistoryEntry, StatePage } from "./types";

/**
 * The LangGraph API's runs of a thread (src/agent-protocol/), in the thread's own SQLite: each run's
 * record and its events, one row per event, so a client that lost its stream joins the run again and
 * replays from its Last-Event-ID, then follows it live. Bounded: the newest MAX_KEPT_RUNS runs are
 * kept (an older one goes with its events), and a run keeps at most MAX_RUN_EVENTS events.
 */
export const RUN_RECORDS_DDL = [
  `CREATE TABLE lg_runs (
    run_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    assistant_id TEXT NOT NULL,
    status TEXT NOT NULL,
    multitask_strategy TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    error TEXT
  )`,
  `CREATE TABLE lg_run_events (run_id TEXT NOT NULL, idx INTEGER NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, idx))`,
];

export const MAX_KEPT_RUNS = 50;
/** A run that wrote nothing this long while nothing held its thread lost its worker (ThreadDO settles it as an error). */
export const STALE_RUN_MS = 15_000;
export const MAX_RUN_EVENTS = 20_000;

export const RunStatus = z.enum(["pending", "running", "success", "error", "interrupted"]);
export type RunStatus = z.infer<typeof RunStatus>;
export const FINISHED: readonly RunStatus[] = ["success", "error", "interrupted"];

export const RunRecord = z.object({
  run_id: z.string(),
  assistant_id: z.string(),
  status: RunStatus,
  multitask_strategy: z.string().nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  error: z.string().nullable(),
});
export type RunRecord = z.infer<typeof RunRecord>;

/** What admitting a run answers (ThreadDO.runAdmit): why it was refused, or its record and whether it made the thread. */
export type RunAdmission = { refused: "missing" | "busy" } | { record: RunRecord; created: boolean };

/** A thread as LangGraph's thread read sees it, from one call to its object (ThreadDO.apiThreadView). */
export type ApiThreadView = { page: StatePage; entry: HistoryEntry | null; busy: boolean; lastRun: RunRecord | null };

/** One kept event: its index in the run (its SSE id's number), name and JSON data. */
export type RunEventRow = { idx: number; event: string; data: string };

/** What a follower gets: the run's events in order, then its end. */
export type RunFeed = { type: "event"; row: RunEventRow } | { type: "end"; status: RunStatus };

export class RunRecords {
  /** Followers of running runs in this object (memory only: a follower holds the object live). */
  readonly #followers = new Map<string, Set<(f: RunFeed) => void>>();

  constructor(private readonly sql: SqlStorage) {}

  /** Records a new run; the oldest beyond MAX_KEPT_RUNS go, with their events. */
  create(r: Omit<RunRecord, "updated_at" | "error">): RunRecord {
    const seq = Number(this.sql.exec<{ n: number | null }>(`SELECT MAX(seq) AS n FROM lg_runs`).one().n ?? 0) + 1;
    this.sql.exec(
      `INSERT INTO lg_runs (run_id, seq, assistant_id, status, multitask_strategy, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      r.run_id,
      seq,
      r.assistant_id,
      r.status,
      r.multitask_strategy,
      r.created_at,
      r.created_at,
    );
    const old = this.sql.exec<{ run_id: string }>(`SELECT run_id FROM lg_runs WHERE seq <= ?`, seq - MAX_KEPT_RUNS).toArray();
    for (const { run_id } of old) {
      this.sql.exec(`DELETE FROM lg_run_events WHERE run_id = ?`, run_id);
      this.sql.exec(`DELETE FROM lg_runs WHERE run_id = ?`, run_id);
    }
    return { ...r, updated_at: r.created_at, error: null };
  }

  get(runId: string): RunRecord | null {
    const row = this.sql
      .exec(`SELECT run_id, assistant_id, status, multitask_strategy, created_at, updated_at, error FROM lg_runs WHERE run_id = ?`, runId)
      .toArray()[0];
    return row === undefined ? null : RunRecord.parse(row);
  }

  /** Newest first. */
  list(opts: { limit: number; offset: number; status?: RunStatus }): RunRecord[] {
    const rows = opts.status
      ? this.sql.exec(`SELECT * FROM lg_runs WHERE status = ? ORDER BY seq DESC LIMIT ? OFFSET ?`, opts.status, opts.limit, opts.offset)
      : this.sql.exec(`SELECT * FROM lg_runs ORDER BY seq DESC LIMIT ? OFFSET ?`, opts.limit, opts.offset);
    return rows.toArray().map((r) => RunRecord.parse(r));
  }

  /** Keeps the run's next events (past MAX_RUN_EVENTS they are sent to followers only) and, with `end`, finishes it. */
  append(runId: string, events: { event: string; data: string }[], end?: { status: RunStatus; error?: string }): void {
    const run = this.get(runId);
    if (!run || FINISHED.includes(run.status)) return;
    let next = Number(this.sql.exec<{ n: number | null }>(`SELECT MAX(idx) AS n FROM lg_run_events WHERE run_id = ?`, runId).one().n ?? -1) + 1;
    const followers = this.#followers.get(runId);
    for (const e of events) {
      const row = { idx: next++, ...e };
      if (row.idx < MAX_RUN_EVENTS)
        this.sql.exec(`INSERT INTO lg_run_events (run_id, idx, event, data) VALUES (?, ?, ?, ?)`, runId, row.idx, row.event, row.data);
      for (const f of followers ?? []) f({ type: "event", row });
    }
    const status = end?.status ?? "running";
    this.sql.exec(`UPDATE lg_runs SET status = ?, updated_at = ?, error = ? WHERE run_id = ?`, status, Date.now(), end?.error ?? null, runId);
    if (end) {
      for (const f of followers ?? []) f({ type: "end", status });
      this.#followers.delete(runId);
    }
  }

  /** The run's kept events after `after`, then (while it runs) each new one as it comes, then its end. */
  follow(runId: string, after: number, feed: (f: RunFeed) => void): { stop: () => void } {
    const rows = this.sql.exec<RunEventRow>(`SELECT idx, event, data FROM lg_run_events WHERE run_id = ? AND idx > ? ORDER BY idx`, runId, after).toArray();
    for (const row of rows) feed({ type: "event", row });
    const run = this.get(runId);
    if (!run || FINISHED.includes(run.status)) {
      feed({ type: "end", status: run?.status ?? "error" });
      return { stop: () => undefined };
    }
    const set = this.#followers.get(runId) ?? new Set();
    this.#followers.set(runId, set);
    set.add(feed);
    return { stop: () => set.delete(feed) };
  }
}
