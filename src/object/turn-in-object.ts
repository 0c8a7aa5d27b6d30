import { loadWordTable } from "../embed/embedded";
import { assertThreadRoom } from "../auth/quotas";
import { AppError } from "../core/errors";
import { errorText, log } from "../core/log";
import type { SpanExporter } from "../core/otlp";
import { newerBookmark } from "../memory/bookmark";
import type { FactsCache } from "../memory/facts-cache";
import type { ThreadLeases } from "../thread/thread-lease";
import { conversationExists } from "../thread/thread-list";
import { threadObjectName } from "../thread/thread-id";
import { type ReconcileReport, reconcileTurn } from "../pipeline/reconcile";
import { storedResponse } from "../responses/body";
import { runTurn, type StreamHooks } from "../pipeline/run";
import { type DeferredBookkeeping, TurnIO } from "../pipeline/turn-io";
import { encodeEvent, type FinalEvent, toTurnError, type ObjectTurnRequest, type TurnEvent } from "../pipeline/turn-wire";
import { type ThreadCapabilities, HeldThread } from "../pipeline/held-thread";
import { Timings } from "../pipeline/timings";
import { type SpendGuard, spendGuard } from "../pipeline/spend-guard";
import { embedMissing } from "../pipeline/run-embed";
import { pendingUsage, type UsageRecord } from "../pipeline/usage";

/** What the thread object hands the run: its bindings, its id, its capabilities, its lease queue and its runs in flight. */
export type ObjectHost = {
  env: Env;
  id: DurableObjectId;
  capabilities: ThreadCapabilities;
  leases: ThreadLeases;
  inFlight: HoldsInFlight;
  /** Facts the object's last reads returned, served to its next runs while fresh (memory/facts-cache.ts). */
  facts: FactsCache;
  /** Where the runs' usage and thread-list writes wait for the object's next batch to D1. */
  deferred: DeferredBookkeeping;
  /** The runs in this object that a cancel can stop, by their TurnInput.cancelKey. */
  cancels: Map<string, AbortController>;
  /** The object's waitUntil: what a run writes after its answer. */
  waitUntil: (p: Promise<unknown>) => void;
  /** Where the runs' spans leave, batched across the object's turns (none when the deployment does not trace). */
  spans: SpanExporter | undefined;
};

/**
 * A run in the object that is not a turn (a write from outside, a fork, a summary): it takes the thread's
 * lease in turn and works through a HeldThread as a turn does, so its save lists the thread and hands the
 * lease on the same way.
 */
export async function holdThread<T>(o: ObjectHost, thread: { tenant: string; threadId: string }, fn: (room: HeldThread) => Promise<T>): Promise<T> {
  const lease = await o.leases.take();
  const ended = o.inFlight.begin();
  // Its list entry leaves on its own right after the write (a reader listing threads next sees it), not with the turns' batch.
  const io = new TurnIO(o.env.DB, undefined);
  const room = new HeldThread({ ...thread, capabilities: o.capabilities, leases: o.leases, lease, env: o.env, io });
  try {
    return await fn(room);
  } finally {
    room.end();
    o.waitUntil(io.settle().finally(ended));
  }
}

/**
 * The runs that have held the thread's lease and not yet finished what they write after it
 * (the facts bookmark, work left behind such as queuing fact extraction). A delete takes the
 * lease and then waits for them, so nothing a run admitted before the delete writes lands after
 * it — the thread never comes back. Runs admitted after the delete wait for the delete's lease.
 */
export class HoldsInFlight {
  #running = 0;
  #waiting: (() => void)[] = [];

  /** A run took the lease; call the returned function once it has written everything. */
  begin(): () => void {
    this.#running++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.#running === 0) for (const wake of this.#waiting.splice(0)) wake();
    };
  }

  /** Resolves once every run begun so far has ended. */
  idle(): Promise<void> {
    return this.#running === 0 ? Promise.resolve() : new Promise((wake) => this.#waiting.push(wake));
  }
}

type TurnRequest = ObjectTurnRequest["input"];

/**
 * A stateful turn inside its thread's object, the one way every principal that may run
 * a turn runs one (chat, invoke, Responses, a webhook delivery): the lease, the window,
 * the facts (D1, from here), middleware, the provider calls, server tools and the save
 * all happen here, against the object's own SQLite, without further hops. Answers a
 * stream of TurnEvents; the run does not depend on the stream being read.
 */
export function streamTurnInObject(o: ObjectHost, req: ObjectTurnRequest): ReadableStream<Uint8Array> {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  let gone = false;
  // Not awaited: the writer queues in order, and a reader that stopped must not stall the run.
  const send = (ev: TurnEvent) => {
    if (!gone) writer.write(encodeEvent(ev)).catch(() => (gone = true));
  };
  const work = turnIn(o, req, send);
  work.finally(() => writer.close().catch(() => undefined)).catch(() => undefined);
  return readable;
}

/**
 * A turn that streams nothing (`stream: false`), answered as one RPC value as soon as it is saved:
 * no event stream to encode and parse. What the run does after its answer (the facts bookmark,
 * work it left behind, its bookkeeping) goes on under the object's waitUntil.
 */
export function answerTurnInObject(o: ObjectHost, req: ObjectTurnRequest): Promise<FinalEvent> {
  return new Promise<FinalEvent>((answer) => {
    const work = turnIn(o, { ...req, stream: false }, (ev) => {
      if (ev.t === "done" || ev.t === "error") answer(ev);
    });
    // Settled once the answer went: a run that ended without one (never expected) answers BEM-001.
    const noAnswer: FinalEvent = { t: "error", error: { code: "BEM-001", message: "Internal error", internal: "the run ended without an answer" } };
    o.waitUntil(
      work.then(
        () => answer(noAnswer),
        () => answer(noAnswer),
      ),
    );
  });
}

/** The run itself; `send` gets its events in order (start and deltas only when streamed), then done or error. */
function turnIn(o: ObjectHost, req: ObjectTurnRequest, send: (ev: TurnEvent) => void): Promise<void> {
  return (async () => {
    const { input } = req;
    const { threadId, principal } = input;
    // The turn's one identity check: the Worker names this object from (tenant, thread), and the room below is this thread's.
    if (threadId === undefined || principal.kind === "operator" || !o.id.equals(o.env.THREADS.idFromName(threadObjectName(principal.tenant, threadId)))) {
      send({ t: "error", error: { code: "BEM-001", message: "Internal error", internal: "run sent to the wrong thread object" } });
      return;
    }
    // Facts at least as fresh as this thread's previous turn and as the client's own writes.
    const bookmark = newerBookmark(o.capabilities.meta.factsBookmark(), input.bookmark);
    const io = new TurnIO(o.env.DB, bookmark, { cache: o.facts, deferred: o.deferred });
    const hooks: StreamHooks | undefined = req.stream
      ? { start: (model, route) => send({ t: "start", model, reason: route.reason }), delta: (ev) => send({ t: "delta", ev }) }
      : undefined;
    let room: HeldThread | undefined;
    let report: ReconcileReport | null = null;
    const cancel = input.cancelKey !== undefined ? new AbortController() : undefined;
    if (cancel && input.cancelKey !== undefined) o.cancels.set(input.cancelKey, cancel);
    const trace = o.spans?.trace(principal.tenant);
    let ended = () => undefined as void;
    let answered = false;
    try {
      // This run's turn on the thread first (FIFO, BEM-038 past the wait): what it continues from —
      // reconciliation, previous_response_id — is decided under its lease, against the head it will extend.
      const lease = await o.leases.take();
      // Recall by meaning needs the embedded table: read once per isolate (a failure: full-text alone, logged).
      await loadWordTable(o.env.ASSETS);
      const template = input.responses?.record;
      // A Responses request's record is stored by the run's last save, in its transaction (one RPC for the whole turn).
      const keep = template
        ? (r: Parameters<typeof storedResponse>[1]) => {
            const { body, record } = storedResponse(template, { ...r, reconciled: report });
            // The record is the thread's history too: counted against MAX_THREAD_HISTORY_BYTES (413 BEM-019 rolls the save back).
            o.capabilities.log.chargeAlongside(o.capabilities.responses.put(record));
            return body;
          }
        : undefined;
      ended = o.inFlight.begin();
      const kind = input.responses?.oneOff ? "response" : "conversation";
      room = new HeldThread({ tenant: principal.tenant, threadId, capabilities: o.capabilities, leases: o.leases, lease, env: o.env, io, keep, kind });
      // A run that would create the thread must fit the tenant's thread quota (413 BEM-017, nothing written); existing threads always take turns.
      if (room.log.headId() === null) {
        // A named conversation with history exists; only an empty one needs its D1 record (no read on a turn of a live one).
        if (input.responses?.conversation && !(await conversationExists(o.env.DB, principal.tenant, threadId)))
          throw new AppError("BEM-102", `No conversation '${threadId.slice(0, 80)}'`);
        if (kind === "response") await assertThreadRoom(o.env, principal.tenant, threadId, req.responseThreadQuota, "response_threads");
        else await assertThreadRoom(o.env, principal.tenant, threadId, req.threadQuota);
      }
      // A client that resends history: only the new part is stored (or a branch taken), decided here against this thread's own rows.
      const settled = input.resent
        ? reconcileTurn(input, room)
        : { input: input.responses?.previousResponse ? afterResponse(room, input, input.responses.previousResponse) : input, report: null };
      report = settled.report;
      const turn = settled.input;
      const deps = { env: o.env, waitUntil: io.later, io, thread: room, ...(cancel ? { signal: cancel.signal } : {}), ...(trace ? { trace } : {}) };
      const {
        timings,
        state: _state,
        ...rest
      } = await runTurn(deps, { input: { ...continued(room, turn), timings: new Timings() }, admission: { scopes: req.scopes } }, hooks);
      send({ t: "done", result: { ...rest, reconciled: report, timings: timings.entries } });
      answered = true;
    } catch (e) {
      send({ t: "error", error: toTurnError(e) });
    } finally {
      // After the answer left: the export never holds the lease, the answer or a delete waiting for this run.
      if (trace) o.spans?.add(trace.spans);
      // A save with end released it already (then this does nothing); any failure gives it back here.
      room?.end();
      if (input.cancelKey !== undefined) o.cancels.delete(input.cancelKey);
    }
    // Only a run that answered keeps its read bookmark: a client's header that D1 refuses (well-formed, but never issued,
    // or another database's) fails that turn alone instead of becoming every later turn's constraint, whoever runs it.
    // A failed run's own writes (memory tools) stand, and the primary issued their bookmark: the next turn reads them.
    const written = io.writtenBookmark();
    const seen = answered ? newerBookmark(bookmark, io.bookmark()) : written && newerBookmark(o.capabilities.meta.factsBookmark(), written);
    try {
      if (seen) o.capabilities.meta.setFactsBookmark(seen);
    } catch {
      // The thread was deleted meanwhile: nothing to keep the bookmark for.
    }
    // Work the run left behind (its usage and thread-list writes wait in the object's pending rows); a delete waits for it.
    try {
      await io.settle();
    } finally {
      settleRecall(room);
      // A remote embedder's vectors for the turns that joined the index (bounded batches, billed to the tenant and held
      // against its and the thread's budgets: the fill serves the thread, whoever wrote its messages, so no key's).
      if (room?.log.vectors.embedderInUse()?.remote) {
        const settles: Promise<unknown>[] = [];
        const guard = spendGuard(o.env, { tenant: principal.tenant, keyId: "" }, threadId, (p) => settles.push(p));
        await embedTurns(room, guard, (u) => o.deferred.usage(pendingUsage(principal.tenant, u)));
        await Promise.allSettled(settles);
      }
      ended();
    }
  })();
}

/**
 * The recall index's work (new messages join it, its segments merge), after the answer left so the answer's commit
 * does not carry those pages. A failure (the thread deleted meanwhile: no index) is logged, never the run's.
 */
function settleRecall(room: HeldThread | undefined): void {
  try {
    room?.log.settleRecallIndex();
  } catch (e) {
    log.error("recall-settle", { message: errorText(e) });
  }
}

/** embedMissing (run-embed.ts) after the answer; a failure other than the embedder's (the thread deleted meanwhile) is logged, never the run's. */
async function embedTurns(room: HeldThread, guard: SpendGuard, bill: (u: UsageRecord) => void): Promise<void> {
  try {
    await embedMissing(room.log, bill, guard);
  } catch (e) {
    log.error("recall-embed", { message: errorText(e) });
  }
}

/** A run continuing a stored Response continues from its checkpoint; the input may answer only the calls that response made. */
function afterResponse(room: HeldThread, input: TurnRequest, previous: { id: string; answers: string[] }): TurnRequest {
  const stored = room.capabilities.responses.get(previous.id);
  if (!stored) throw new AppError("BEM-100", `No response '${previous.id.slice(0, 80)}'`);
  const unknown = previous.answers.find((id) => !stored.call_ids.includes(id));
  if (unknown !== undefined)
    throw new AppError("BEM-101", `function_call_output for unknown call_id '${unknown.slice(0, 80)}': no earlier function_call made it`);
  const { previousResponse: _resolved, ...responses } = input.responses ?? {};
  return { ...input, responses: { ...responses, continueFrom: stored.checkpoint_id } };
}

/** `continueFrom` at the head is a plain continuation; anywhere else it is a branch there (prepare then checks the rewrite right). */
function continued(room: HeldThread, input: TurnRequest): TurnRequest {
  const continueFrom = input.responses?.continueFrom;
  if (continueFrom === undefined || continueFrom === room.log.headId()) return input;
  return { ...input, checkpointId: continueFrom };
}
