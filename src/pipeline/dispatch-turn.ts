import { AppError } from "../core/errors";
import { spanExporter } from "../core/otlp";
import { quotaOf } from "../auth/quotas";
import { parseThreadId, threadStub } from "../thread/thread-id";
import { admitTurn } from "./admit";
import { runTurn, type StreamHooks } from "./run";
import { TurnIO } from "./turn-io";
import { fromTurnError, readEvents, type TurnEvent } from "./turn-wire";
import { Timings } from "./timings";
import type { TurnInput, TurnResult } from "./turn";

/** What a Worker needs to start a turn: its bindings and where work after the answer goes. */
export type WorkerDeps = { env: Env; waitUntil: (p: Promise<unknown>) => void; fetch?: typeof fetch };

/**
 * Runs a turn, from any principal that may run one (a key's chat, invoke or Responses
 * request, a webhook delivery): a stateful turn inside its thread's object (one RPC; the
 * object holds the lease, reads, calls the model and saves without further hops; a streamed
 * turn answers an event stream, any other its result as one value), a stateless one here in
 * the Worker. Same contract as runTurn.
 */
export function dispatchTurn(deps: WorkerDeps, input: TurnInput, stream?: StreamHooks): Promise<TurnResult> {
  return input.threadId === undefined ? runStateless(deps, input, stream) : runInThreadObject(deps, input, stream);
}

/** A turn without a thread, in the Worker: its D1 bookkeeping leaves as one batch after the answer. */
async function runStateless(deps: WorkerDeps, input: TurnInput, stream?: StreamHooks): Promise<TurnResult> {
  const admission = admitTurn(input);
  const io = new TurnIO(deps.env.DB, input.bookmark);
  const spans = spanExporter(deps.env, deps.waitUntil);
  const trace = spans?.trace(input.principal.tenant);
  try {
    return await runTurn({ ...deps, io, ...(trace ? { trace } : {}) }, { input, admission }, stream);
  } finally {
    deps.waitUntil(io.settle());
    if (trace) spans?.add(trace.spans);
  }
}

async function runInThreadObject(deps: WorkerDeps, input: TurnInput, stream?: StreamHooks): Promise<TurnResult> {
  const timings = input.timings ?? new Timings();
  const threadId = parseThreadId(input.threadId ?? "");
  const { scopes } = admitTurn({ ...input, threadId });
  timings.lap("request");
  const { env } = deps;
  const stub = threadStub(env, input.principal.tenant, threadId);
  const { timings: _local, ...sent } = input;
  // The thread quota is checked in the object, and only when the thread has no history: no D1 read on a turn of an existing thread.
  const req = {
    input: { ...sent, threadId },
    scopes,
    stream: stream !== undefined,
    threadQuota: quotaOf(env, "threads"),
    responseThreadQuota: quotaOf(env, "response_threads"),
  };
  if (!stream) {
    // Nothing to stream: the answer is one RPC value; what the run writes after it goes on in the object.
    const ev = await stub.answerTurn(req);
    if (ev.t === "done") return toResult(ev, timings);
    throw fromTurnError(ev.error);
  }
  const body = await stub.streamTurn(req);

  let settle!: { ok: (r: TurnResult) => void; fail: (e: unknown) => void };
  const answer = new Promise<TurnResult>((ok, fail) => (settle = { ok, fail }));
  // Read to the end even after the answer: the object's bookkeeping finishes inside this call.
  const reading = (async () => {
    let answered = false;
    try {
      for await (const ev of readEvents(body)) {
        if (answered) continue;
        if (ev.t === "start") await stream?.start(ev.model, { reason: ev.reason });
        else if (ev.t === "delta") await stream?.delta(ev.ev);
        else {
          answered = true;
          if (ev.t === "done") settle.ok(toResult(ev, timings));
          else settle.fail(fromTurnError(ev.error));
        }
      }
      if (!answered) settle.fail(new AppError("BEM-001", undefined, { internal: "thread object's run stream ended without an answer" }));
    } catch (e) {
      if (!answered) settle.fail(e);
    }
  })();
  deps.waitUntil(reading);
  return answer;
}

function toResult(ev: TurnEvent & { t: "done" }, timings: Timings): TurnResult {
  const { timings: phases, ...result } = ev.result;
  timings.add(phases.filter(([name]) => name !== "request"));
  // The thread state stays in the object; over HTTP only the reply and the summary are returned.
  return { ...result, timings, state: { messages: [] } };
}
