import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { servedModes, StreamModes } from "../agent-protocol/run-body";
import { AP, notServed } from "../agent-protocol/served";
import { AppError } from "../core/errors";
import type { Principal } from "../core/principal";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent, jsonOrEventStream } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { parseNdjson } from "../providers/ndjson";
import type { ThreadClient } from "../thread/client";
import { FINISHED, type RunFeed, type RunRecord, RunStatus } from "../thread/run-records";
import { existingThread } from "./agent-protocol-threads";
import { eventId, eventIndex, runOf } from "./agent-protocol-run-log";
import { stateAt } from "./agent-protocol-state";
import { Run } from "./agent-protocol-runs";
import { sseResponse } from "./sse";

/**
 * A thread's LangGraph runs after they started: list, read, cancel, join (wait for the end) and
 * join the stream (replay the kept events after Last-Event-ID, then follow live). The runs and their
 * events are kept in the thread's object (src/thread/run-records.ts).
 */

const ThreadParam = z.object({ thread_id: z.string().openapi({ param: { name: "thread_id", in: "path" }, description: "The thread's id" }) });
const RunParams = ThreadParam.extend({
  run_id: z
    .string()
    .max(64)
    .openapi({ param: { name: "run_id", in: "path" }, description: "The run's id" }),
});
const READ_ERRORS = ["BEM-022", "BEM-025", "BEM-030", "BEM-036", "BEM-200"] as const;
const common = { middleware: access("reach_thread"), tags: ["langgraph-api"] };

/** The run of a thread the caller reaches; 404 BEM-200 when the thread has no such run (kept). */
async function existingRun(env: Env, p: Principal, params: { thread_id: string; run_id: string }): Promise<{ client: ThreadClient; run: RunRecord }> {
  const { client } = await existingThread(env, p, params.thread_id);
  const run = await client.runGet(params.run_id);
  if (!run) throw new AppError("BEM-200", `No run '${params.run_id.slice(0, 64)}' on thread '${client.threadId}' (the newest runs are kept)`);
  return { client, run };
}

/** Refuses cancel_on_disconnect=1: a run goes on to its end whoever listens. */
function refuseCancelOnDisconnect(v: string | undefined): void {
  if (v === "1" || v === "true") notServed("cancel_on_disconnect", "a run always goes on to its end and is saved");
}

/** The feed of a run's events after `after`, until its end. */
async function* feedOf(client: ThreadClient, runId: string, after: number): AsyncGenerator<RunFeed> {
  for await (const f of parseNdjson(await client.runFollow(runId, after))) yield f as RunFeed;
}

const MODE_OF_EVENT: Record<string, string> = { values: "values", updates: "updates", messages: "messages-tuple", custom: "custom" };
/** Whether a kept event belongs to the stream modes a joiner asked for (metadata and errors always do). */
function inModes(event: string, modes: string[] | undefined): boolean {
  if (!modes || event === "metadata" || event === "error") return true;
  return modes.includes(event.startsWith("messages/") ? "messages" : (MODE_OF_EVENT[event] ?? event));
}

const listRuns = createRoute({
  ...common,
  method: "get",
  path: `${AP}/threads/{thread_id}/runs`,
  summary: "The thread's runs, newest first (the newest are kept)",
  request: {
    params: ThreadParam,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(100).default(10),
      offset: z.coerce.number().int().min(0).default(0),
      status: RunStatus.optional(),
      // The SDK sends an array as the parameter repeated, which arrives as an array of strings.
      select: z.union([z.string().max(64), z.array(z.string().max(64)).max(32)]).optional(),
    }),
  },
  responses: { 200: jsonContent(z.array(Run), "Runs"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036", "BEM-202") },
});

const getRun = createRoute({
  ...common,
  method: "get",
  path: `${AP}/threads/{thread_id}/runs/{run_id}`,
  summary: "A run: its status",
  request: { params: RunParams },
  responses: { 200: jsonContent(Run, "The run"), ...errorResponses(...READ_ERRORS) },
});

const cancelRun = createRoute({
  ...common,
  middleware: access("reach_thread", "small"),
  method: "post",
  path: `${AP}/threads/{thread_id}/runs/{run_id}/cancel`,
  summary: "Cancel a running run: it stops and saves nothing (the thread stays at the checkpoint before it); wait=1 waits for its end",
  request: {
    params: RunParams,
    query: z.object({ wait: z.string().max(8).optional(), action: z.enum(["interrupt", "rollback"]).optional(), reason: z.string().max(256).optional() }),
    // The SDK puts the options in the query; a body may carry them too.
    body: {
      required: false,
      content: {
        "application/json": {
          schema: z
            .object({ wait: z.boolean().optional(), action: z.enum(["interrupt", "rollback"]).optional() })
            .openapi({ description: "The query's options, as JSON" }),
        },
      },
    },
  },
  responses: { 204: { description: "Cancelled (and, with wait=1, ended)" }, ...errorResponses(...READ_ERRORS, "BEM-202", "BEM-203") },
});

const joinRun = createRoute({
  ...common,
  method: "get",
  path: `${AP}/threads/{thread_id}/runs/{run_id}/join`,
  summary: "Wait for a run to end: the thread's values then",
  request: { params: RunParams, query: z.object({ cancel_on_disconnect: z.string().max(8).optional() }) },
  responses: { 200: jsonContent(z.looseObject({}).openapi({ type: "object" }), "The thread's values"), ...errorResponses(...READ_ERRORS, "BEM-202") },
});

const joinStream = createRoute({
  ...common,
  method: "get",
  path: `${AP}/threads/{thread_id}/runs/{run_id}/stream`,
  summary: "A run's event stream: the kept events after Last-Event-ID (all without it), then live to its end",
  request: {
    params: RunParams,
    headers: z.object({
      "last-event-id": z.string().max(64).optional().openapi({ description: "The id of the last event received; -1 (or none): from the first" }),
    }),
    query: z.object({
      cancel_on_disconnect: z.string().max(8).optional(),
      stream_mode: StreamModes.optional(),
    }),
  },
  responses: { 200: jsonOrEventStream(z.string(), "The run's events"), ...errorResponses(...READ_ERRORS, "BEM-011", "BEM-202") },
});

export const runRecordRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listRuns, async (c) => {
    const q = c.req.valid("query");
    if (q.select) notServed("select", "runs are listed whole");
    const { client } = await existingThread(c.env, c.get("principal"), c.req.valid("param").thread_id);
    const runs = await client.runList({ limit: q.limit, offset: q.offset, ...(q.status ? { status: q.status } : {}) });
    return c.json(
      runs.map((r) => runOf(client.threadId, r)),
      200,
    );
  })
  .openapi(getRun, async (c) => {
    const { client, run } = await existingRun(c.env, c.get("principal"), c.req.valid("param"));
    return c.json(runOf(client.threadId, run), 200);
  })
  .openapi(cancelRun, async (c) => {
    const q = c.req.valid("query");
    if (q.reason !== undefined) notServed("reason", "a cancel has no reason to keep");
    const { client, run } = await existingRun(c.env, c.get("principal"), c.req.valid("param"));
    if (FINISHED.includes(run.status)) throw new AppError("BEM-203", `Run '${run.run_id}' has finished (${run.status}): nothing to cancel`);
    // Either action: a cancelled run saves nothing, so the thread stays at the checkpoint before it.
    if (!(await client.runCancel(run.run_id))) notServed("cancel of a run not yet at its thread", "retry in a moment");
    const wait = q.wait === "1" || q.wait === "true" || c.req.valid("json")?.wait === true;
    if (wait) for await (const f of feedOf(client, run.run_id, Number.MAX_SAFE_INTEGER)) if (f.type === "end") break;
    return c.body(null, 204);
  })
  .openapi(joinRun, async (c) => {
    refuseCancelOnDisconnect(c.req.valid("query").cancel_on_disconnect);
    const p = c.get("principal");
    const { client, run } = await existingRun(c.env, p, c.req.valid("param"));
    // Follow from the end of what is kept: only the end matters here.
    for await (const f of feedOf(client, run.run_id, Number.MAX_SAFE_INTEGER)) if (f.type === "end") break;
    return c.json((await stateAt(client, p)).values, 200);
  })
  .openapi(joinStream, async (c) => {
    const q = c.req.valid("query");
    refuseCancelOnDisconnect(q.cancel_on_disconnect);
    const { client, run } = await existingRun(c.env, c.get("principal"), c.req.valid("param"));
    const last = c.req.valid("header")["last-event-id"];
    // "-1" is LangGraph's "from the start": useStream rejoins with it after a reload.
    const after = last === undefined || last === "" || last === "-1" ? -1 : eventIndex(run.run_id, last);
    if (after === undefined) throw new AppError("BEM-011", `Last-Event-ID '${last}' is not an event of run '${run.run_id}'`);
    const modes = q.stream_mode === undefined ? undefined : servedModes(q.stream_mode);
    const feed = feedOf(client, run.run_id, after);
    return sseResponse(
      async (out) => {
        for await (const f of feed) {
          if (f.type === "end" || out.clientGone) break;
          if (inModes(f.row.event, modes)) await out.send(f.row.data, f.row.event, eventId(run.run_id, f.row.idx));
        }
        await feed.return(undefined);
      },
      (w) => c.executionCtx.waitUntil(w),
    );
  });
