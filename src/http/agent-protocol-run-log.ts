import { endStatus } from "../agent-protocol/interrupts";
import { isAppError } from "../core/errors";
import { errorText, log } from "../core/log";
import type { ThreadClient } from "../thread/client";
import type { RunRecord, RunStatus } from "../thread/run-records";
import type { SseWriter } from "./sse";
import type { StreamRenderer } from "./stream-run";

/**
 * Keeps a run's events in its thread's object as the run renders them (src/thread/run-records.ts),
 * for join and rejoin: in order, one append in flight at a time, what came meanwhile going with the
 * next, so a run of many tokens costs a handful of RPCs and never waits on them.
 */
export class RunLog {
  #pending: { event: string; data: string }[] = [];
  #end: { status: RunStatus; error?: string } | undefined;
  #sending: Promise<void> | undefined;

  constructor(
    private readonly client: ThreadClient,
    readonly runId: string,
  ) {}

  push(event: string, data: string): void {
    this.#pending.push({ event, data });
    this.#kick();
  }

  /** The run ended: its last events and its status go; resolves once they are kept. */
  end(status: RunStatus, error?: string): Promise<void> {
    this.#end ??= { status, ...(error !== undefined ? { error } : {}) };
    this.#kick();
    return this.#sending ?? Promise.resolve();
  }

  #kick(): void {
    this.#sending ??= this.#send().finally(() => {
      this.#sending = undefined;
      if (this.#pending.length > 0) this.#kick();
    });
  }

  async #send(): Promise<void> {
    while (this.#pending.length > 0 || this.#end) {
      const batch = this.#pending.splice(0);
      const end = this.#end;
      try {
        await this.client.runAppend(this.runId, batch, end);
      } catch (e) {
        // Lost events only cost a rejoin its replay; the run and its checkpoints are unaffected.
        log.error("run-log", { run: this.runId, message: errorText(e) });
      }
      if (end) return;
    }
  }
}

/** A writer that keeps each event in the log and, while there is one, sends it to the client too. */
function teed(out: SseWriter | undefined, runLog: RunLog): SseWriter {
  return {
    get clientGone() {
      return out?.clientGone ?? true;
    },
    onGone(listener) {
      out?.onGone(listener);
    },
    async send(data, event, id) {
      runLog.push(event ?? "message", data);
      if (out) await out.send(data, event, id);
    },
  };
}

/** `inner`, with every event kept in `runLog` and the run's end recorded before the client's stream closes. */
export function recorded(inner: StreamRenderer, runLog: RunLog): StreamRenderer {
  return {
    ...(inner.headers ? { headers: inner.headers } : {}),
    start: (out, m) => inner.start(teed(out, runLog), m),
    delta: (out, ev) => inner.delta(teed(out, runLog), ev),
    async done(out, r) {
      await inner.done(teed(out, runLog), r);
      await runLog.end(endStatus(r));
    },
    async error(out, e) {
      await inner.error(teed(out, runLog), e);
      await runLog.end(failedStatus(e), publicError(e));
    },
  };
}

/** What a failed run's record says: its code and message (an internal error's detail goes to the log only). */
export const publicError = (e: unknown): string => (isAppError(e) && e.code !== "BEM-001" ? `${e.code}: ${e.message}` : "BEM-001: Internal error");

/** How a failed run is recorded: interrupted when it was cancelled (BEM-204), else error. */
export const failedStatus = (e: unknown): RunStatus => (isAppError(e) && e.code === "BEM-204" ? "interrupted" : "error");

/** A run's record as LangGraph's API returns it. */
export function runOf(threadId: string, r: RunRecord) {
  return {
    run_id: r.run_id,
    thread_id: threadId,
    assistant_id: r.assistant_id,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
    status: r.status,
    metadata: {},
    multitask_strategy: r.multitask_strategy,
    kwargs: {},
    ...(r.error ? { error: r.error } : {}),
  };
}

/** An event's SSE id: its index in the run and the run's tag, so a Last-Event-ID of another run is told apart. */
export const eventId = (runId: string, idx: number): string => `${idx}-${runId.slice(0, 8)}`;

/** The index a Last-Event-ID names in run `runId`; undefined when it is not one of this run's ids. */
export function eventIndex(runId: string, id: string): number | undefined {
  const m = /^(\d{1,9})-([0-9a-f]{8})$/.exec(id);
  return m && m[2] === runId.slice(0, 8) ? Number(m[1]) : undefined;
}
