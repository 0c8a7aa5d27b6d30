import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authorizeThread } from "../auth/policy";
import { assertThreadRoom } from "../auth/quotas";
import { AppError } from "../core/errors";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent, jsonOrEventStream } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { stateFor } from "./memory-view";
import { streamRun } from "./stream-run";
import { RUN_ERRORS } from "./turn-edge";
import { dispatchTurn } from "../pipeline/dispatch-turn";
import type { TurnResult } from "../pipeline/turn";
import { ThreadClient } from "../thread/client";
import { parseThreadId } from "../thread/thread-id";
import type { ThreadState } from "../thread/types";
import { requireAssistant } from "../agent-protocol/assistants";
import { checkRunBody, RunBody, turnOf } from "../agent-protocol/run-body";
import { type RunView, runRenderer } from "./agent-protocol-stream";
import { AP } from "../agent-protocol/served";
import { failedStatus, publicError, RunLog, recorded, runOf } from "./agent-protocol-run-log";
import { valuesOf } from "./agent-protocol-state";
import type { SseWriter } from "./sse";
import type { StreamRenderer } from "./stream-run";
import { endStatus, interruptOf } from "../agent-protocol/interrupts";
import { mergeMetadata } from "../agent-protocol/thread-records";
import { errorText, log } from "../core/log";
import type { RunRecord } from "../thread/run-records";

/**
 * LangGraph's runs, streamed (`runs/stream`) or answered when done (`runs/wait`), on a thread or
 * without one. A run is an edgeweave turn like every other (src/http/turn-edge.ts): the same
 * pipeline, in the thread's object, with memory, routing, usage, quotas and rate limits.
 */

const ThreadParam = z.object({ thread_id: z.string().openapi({ param: { name: "thread_id", in: "path" }, description: "The thread's id" }) });
const body = { required: true, content: { "application/json": { schema: RunBody } } };
export const Run = z.looseObject({ run_id: z.string(), thread_id: z.string(), status: z.string() }).openapi("LangGraphRun");
const RUN_API_ERRORS = [...RUN_ERRORS, "BEM-025", "BEM-030", "BEM-036", "BEM-047", "BEM-202"] as const;

const streamResponses = {
  200: jsonOrEventStream(z.string(), "LangGraph's event stream: metadata, then the events of the stream modes asked for"),
  ...errorResponses(...RUN_API_ERRORS),
};
const waitResponses = {
  200: jsonContent(z.looseObject({}).openapi({ type: "object" }), "The thread's values when the run is done"),
  ...errorResponses(...RUN_API_ERRORS),
};
const common = { method: "post" as const, middleware: access("run", "conversation", { idempotent: true }), tags: ["langgraph-api"] };

const threadStream = createRoute({
  ...common,
  path: `${AP}/threads/{thread_id}/runs/stream`,
  summary: "Run an assistant on the thread, streamed",
  request: { params: ThreadParam, body },
  responses: streamResponses,
});
const threadWait = createRoute({
  ...common,
  path: `${AP}/threads/{thread_id}/runs/wait`,
  summary: "Run an assistant on the thread; answers its values when done",
  request: { params: ThreadParam, body },
  responses: waitResponses,
});
const threadBackground = createRoute({
  ...common,
  path: `${AP}/threads/{thread_id}/runs`,
  summary: "Start a background run on the thread: its record at once; join it, or its stream, later",
  request: { params: ThreadParam, body },
  responses: { 200: jsonContent(Run, "The run, pending"), ...errorResponses(...RUN_API_ERRORS, "BEM-032") },
});
const threadlessStream = createRoute({
  ...common,
  path: `${AP}/runs/stream`,
  summary: "Run an assistant without a thread (on_completion keep: on a new one), streamed",
  request: { body },
  responses: streamResponses,
});
const threadlessWait = createRoute({
  ...common,
  path: `${AP}/runs/wait`,
  summary: "Run an assistant without a thread (on_completion keep: on a new one); answers its values when done",
  request: { body },
  responses: waitResponses,
});

const EMPTY: ThreadState = { checkpoint_id: null, step: 0, channels: { messages: [] }, reducers: {} };

/** A run of `threadId` (or of none) admitted: its turn, how to render it, where it is. */
async function admitRun(c: Context<AppEnv>, rawThread: string | undefined, b: RunBody, opts: { branchChecked?: boolean } = {}) {
  const p = c.get("principal");
  const modes = checkRunBody(b);
  const { agent, assistant } = await requireAssistant(b.assistant_id);
  const runId = crypto.randomUUID();
  const keep = rawThread === undefined && b.on_completion === "keep";
  if (rawThread !== undefined && b.on_completion) throw new AppError("BEM-011", "on_completion is for runs without a thread");
  const threadId = rawThread !== undefined ? parseThreadId(rawThread) : keep ? crypto.randomUUID() : undefined;
  const { turn, input } = turnOf(b, { principal: p, timings: c.get("timings"), agentName: agent.name, threadId, runId });
  const thread = threadId !== undefined ? new ThreadClient(c.env, p.tenant, threadId) : undefined;
  if (thread) authorizeThread(p, thread.threadId, turn.checkpointId !== undefined);
  const deps = { env: c.env, waitUntil: (w: Promise<unknown>) => c.executionCtx.waitUntil(w) };
  const read = (checkpoint?: string) => (thread ? thread.getState(checkpoint).then((s) => stateFor(p, s)) : Promise.resolve(EMPTY));
  const before = read(turn.checkpointId);
  before.catch(() => undefined); // a bad branch point fails the run itself, answered below
  // `branchChecked`: a bad branch point is the request's 404 before anything is recorded (a run that answers at once).
  if (opts.branchChecked) await before;
  let record: RunRecord | undefined;
  let stamped: Promise<unknown> = Promise.resolve();
  if (thread) {
    const create = keep || b.if_not_exists === "create";
    if (create) await assertThreadRoom(c.env, p.tenant, thread.threadId);
    // One call to the thread's object: it exists, it is free when reject asks so, and the run is recorded there (join, rejoin).
    const admitted = await thread.runAdmit(
      { run_id: runId, assistant_id: assistant.assistant_id, status: "pending", multitask_strategy: b.multitask_strategy ?? "reject", created_at: Date.now() },
      {
        reject: (b.multitask_strategy ?? "reject") === "reject",
        create,
        interrupt: b.multitask_strategy === "interrupt" || b.multitask_strategy === "rollback",
      },
    );
    if ("refused" in admitted) {
      if (admitted.refused === "missing") throw new AppError("BEM-036", `No thread '${thread.threadId}' (if_not_exists: "create" creates it)`);
      throw new AppError("BEM-038", `Thread '${thread.threadId}' is busy with another run (multitask_strategy enqueue waits its turn)`);
    }
    record = admitted.record;
    // As LangGraph's server does, the thread says which assistant runs on it (Agent Chat UI lists threads by graph_id); off the
    // path to the first token, and the run's end waits for it, so whoever reads the thread after the run sees it.
    stamped = mergeMetadata(c.env.DB, p.tenant, thread.threadId, { graph_id: agent.name, assistant_id: assistant.assistant_id }).catch((e: unknown) =>
      log.error("thread-list", { message: errorText(e) }),
    );
    deps.waitUntil(stamped);
  }
  const view: RunView = {
    runId,
    threadId: threadId ?? null,
    assistant,
    modes,
    input,
    before,
    after: async (r: TurnResult) => {
      await stamped;
      return thread && r.checkpointId ? read(r.checkpointId) : ({ ...EMPTY, channels: { ...r.state, messages: r.state.messages } } satisfies ThreadState);
    },
  };
  // Relative to the API's root, as LangGraph's SDK reads it: it puts its apiUrl (ours ends in /v1/agent-protocol) before the path it rejoins.
  const location = threadId !== undefined ? `/threads/${threadId}/runs/${runId}` : `/runs/${runId}`;
  const runLog = thread ? new RunLog(thread, runId) : undefined;
  return { turn, view, deps, location, record, runLog, threadId, thread };
}

/** on_disconnect cancel: the run is cancelled when its client goes away (the default, continue, lets it finish). */
function cancelledWhenGone(inner: StreamRenderer, cancel: () => Promise<unknown>): StreamRenderer {
  return {
    ...inner,
    start: async (out, m) => {
      out.onGone(() => void cancel().catch((e: unknown) => log.error("run-cancel", { message: errorText(e) })));
      await inner.start(out, m);
    },
  };
}

/**
 * The run as LangGraph's event stream; Content-Location names it (the SDK reads the run's id there), and
 * on a thread Location names its join stream (the SDK rejoins there with Last-Event-ID when the stream breaks).
 */
async function streamed(c: Context<AppEnv>, rawThread: string | undefined, b: RunBody): Promise<Response> {
  const { turn, view, deps, location, runLog, thread } = await admitRun(c, rawThread, b);
  let render = runRenderer(view);
  if (runLog) render = recorded(render, runLog);
  if (thread && b.on_disconnect === "cancel") render = cancelledWhenGone(render, () => thread.runCancel(view.runId));
  const res = await streamRun(deps, turn, render).catch(async (e: unknown) => {
    await runLog?.end(failedStatus(e), publicError(e));
    throw e;
  });
  res.headers.set("Content-Location", location);
  if (runLog) res.headers.set("Location", `${location}/stream`);
  return res;
}

/** The run to its end: the thread's values. */
async function waited(c: Context<AppEnv>, rawThread: string | undefined, b: RunBody) {
  const { turn, view, deps, location, runLog } = await admitRun(c, rawThread, b);
  const r = await dispatchTurn(deps, turn).catch(async (e: unknown) => {
    await runLog?.end(failedStatus(e), publicError(e));
    throw e;
  });
  await runLog?.end(endStatus(r));
  const after = await view.after(r);
  const interrupt = interruptOf(after.channels.messages);
  return c.json({ ...valuesOf(after), ...(interrupt ? { __interrupt__: [interrupt] } : {}) }, 200, { "Content-Location": location });
}

/** A background run: answered with its record at once; it runs on (kept alive by waitUntil), its events kept for join. */
async function background(c: Context<AppEnv>, rawThread: string, b: RunBody) {
  const { turn, view, deps, location, record, runLog, threadId } = await admitRun(c, rawThread, b, { branchChecked: true });
  if (!record || !runLog || !threadId) throw new AppError("BEM-001", undefined, { internal: "a background run without its thread" });
  const render = recorded(runRenderer(view), runLog);
  const out: SseWriter = { clientGone: true, send: async () => undefined, onGone: () => undefined };
  deps.waitUntil(
    dispatchTurn(deps, turn, { start: (m) => render.start(out, m), delta: (ev) => render.delta(out, ev) }).then(
      (r) => render.done(out, r),
      (e: unknown) => render.error(out, e),
    ),
  );
  return c.json(runOf(threadId, record), 200, { "Content-Location": location });
}

export const runApiRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(threadBackground, (c) => background(c, c.req.valid("param").thread_id, c.req.valid("json")))
  .openapi(threadStream, (c) => streamed(c, c.req.valid("param").thread_id, c.req.valid("json")))
  .openapi(threadWait, (c) => waited(c, c.req.valid("param").thread_id, c.req.valid("json")))
  .openapi(threadlessStream, (c) => streamed(c, undefined, c.req.valid("json")))
  .openapi(threadlessWait, (c) => waited(c, undefined, c.req.valid("json")));
