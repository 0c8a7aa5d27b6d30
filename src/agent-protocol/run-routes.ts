import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authorizeThread } from "../auth/policy";
import { assertThreadRoom } from "../auth/quotas";
import { AppError } from "../core/errors";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent, jsonOrEventStream } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { stateFor } from "../http/memory-view";
import { streamRun } from "../http/stream-run";
import { RUN_ERRORS } from "../http/turn-edge";
import { runAnyTurn } from "../pipeline/run-in-object";
import type { TurnResult } from "../pipeline/turn";
import { ThreadClient } from "../thread/client";
import { parseThreadId } from "../thread/thread-id";
import type { ThreadState } from "../thread/types";
import { requireAssistant } from "./assistants";
import { checkRunBody, RunBody, turnOf } from "./run-body";
import { type RunView, runRenderer } from "./run-stream";
import { AP } from "./served";
import { valuesOf } from "./state";
import { getRecord, insertRecord, mergeMetadata } from "./thread-records";

/**
 * LangGraph's runs, streamed (`runs/stream`) or answered when done (`runs/wait`), on a thread or
 * without one. A run is an edgeweave turn like every other (src/http/turn-edge.ts): the same
 * pipeline, in the thread's object, with memory, routing, usage, quotas and rate limits.
 */

const ThreadParam = z.object({ thread_id: z.string().openapi({ param: { name: "thread_id", in: "path" }, description: "The thread's id" }) });
const body = { required: true, content: { "application/json": { schema: RunBody } } };
const RUN_API_ERRORS = [...RUN_ERRORS, "BEM-025", "BEM-030", "BEM-036", "BEM-047", "BEM-202"] as const;

const streamResponses = {
  200: jsonOrEventStream(z.string(), "LangGraph's event stream: metadata, then the events of the stream modes asked for"),
  ...errorResponses(...RUN_API_ERRORS),
};
const waitResponses = {
  200: jsonContent(z.looseObject({}).openapi({ type: "object" }), "The thread's values when the run is done"),
  ...errorResponses(...RUN_API_ERRORS),
};
const common = { method: "post" as const, middleware: access("run", "run", { idempotent: true }), tags: ["langgraph-api"] };

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
async function admitRun(c: Context<AppEnv>, rawThread: string | undefined, b: RunBody) {
  const p = c.get("principal");
  const modes = checkRunBody(b);
  const { agent, assistant } = await requireAssistant(b.assistant_id);
  const runId = crypto.randomUUID();
  const keep = rawThread === undefined && b.on_completion === "keep";
  if (rawThread !== undefined && b.on_completion) throw new AppError("BEM-011", "on_completion is for runs without a thread");
  const threadId = rawThread !== undefined ? parseThreadId(rawThread) : keep ? crypto.randomUUID() : undefined;
  const { turn, input } = turnOf(b, { principal: p, timings: c.get("timings"), agentName: agent.name, threadId });
  let client: ThreadClient | undefined;
  if (threadId !== undefined) {
    authorizeThread(p, threadId, turn.checkpointId !== undefined);
    if (!(await getRecord(c.env.DB, p.tenant, threadId))) {
      if (!keep && b.if_not_exists !== "create") throw new AppError("BEM-036", `No thread '${threadId}' (if_not_exists: "create" creates it)`);
      await assertThreadRoom(c.env, p.tenant, threadId);
      await insertRecord(c.env.DB, p.tenant, threadId, {});
    }
    client = new ThreadClient(c.env, p.tenant, threadId);
    if ((b.multitask_strategy ?? "reject") === "reject" && (await client.busy()))
      throw new AppError("BEM-038", `Thread '${threadId}' is busy with another run (multitask_strategy enqueue waits its turn)`);
    // As LangGraph's server does: the thread says which assistant runs on it (Agent Chat UI lists threads by graph_id).
    await mergeMetadata(c.env.DB, p.tenant, threadId, { graph_id: agent.name, assistant_id: assistant.assistant_id });
  }
  const thread = client;
  const read = (checkpoint?: string) => (thread ? thread.getState(checkpoint).then((s) => stateFor(p, s)) : Promise.resolve(EMPTY));
  const before = read(turn.checkpointId);
  before.catch(() => undefined); // a bad branch point fails the run itself, answered below
  const view: RunView = {
    runId,
    threadId: threadId ?? null,
    assistant,
    modes,
    input,
    before,
    after: (r: TurnResult) =>
      thread && r.checkpointId
        ? read(r.checkpointId)
        : Promise.resolve({ ...EMPTY, channels: { ...r.state, messages: r.state.messages } } satisfies ThreadState),
  };
  const location = threadId !== undefined ? `${AP}/threads/${threadId}/runs/${runId}` : `${AP}/runs/${runId}`;
  const deps = { env: c.env, waitUntil: (w: Promise<unknown>) => c.executionCtx.waitUntil(w) };
  return { turn, view, deps, location };
}

/** The run as LangGraph's event stream; Content-Location names it (the SDK reads the run's id there). */
async function streamed(c: Context<AppEnv>, rawThread: string | undefined, b: RunBody): Promise<Response> {
  const { turn, view, deps, location } = await admitRun(c, rawThread, b);
  const res = await streamRun(deps, turn, runRenderer(view));
  res.headers.set("Content-Location", location);
  return res;
}

/** The run to its end: the thread's values. */
async function waited(c: Context<AppEnv>, rawThread: string | undefined, b: RunBody) {
  const { turn, view, deps, location } = await admitRun(c, rawThread, b);
  const r = await runAnyTurn(deps, turn);
  return c.json(valuesOf(await view.after(r)), 200, { "Content-Location": location });
}

export const runApiRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(threadStream, (c) => streamed(c, c.req.valid("param").thread_id, c.req.valid("json")))
  .openapi(threadWait, (c) => waited(c, c.req.valid("param").thread_id, c.req.valid("json")))
  .openapi(threadlessStream, (c) => streamed(c, undefined, c.req.valid("json")))
  .openapi(threadlessWait, (c) => waited(c, undefined, c.req.valid("json")));
