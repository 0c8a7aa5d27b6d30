import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { authorizeThread, readableThreads } from "../auth/policy";
import { assertThreadRoom } from "../auth/quotas";
import { AppError } from "../core/errors";
import type { Principal } from "../core/principal";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { ThreadClient } from "../thread/client";
import { parseThreadId } from "../thread/thread-id";
import { CheckpointId } from "../thread/types";
import { allAssistants, requireAssistant, schemasOf } from "../agent-protocol/assistants";
import { LangChainMessage, toInput } from "../agent-protocol/messages";
import { AP, refuseUnserved, Unserved } from "../agent-protocol/served";
import { checkpointRef, historyOf, stateAt, threadOf } from "./agent-protocol-state";
import { getRecord, insertRecord, mergeMetadata, Metadata, type ThreadRecord, searchRecords, SortBy } from "../agent-protocol/thread-records";

/**
 * LangGraph's server API, the part that reads (info, assistants) and keeps threads (create, search,
 * read, patch, delete, state, history), under AP (src/agent-protocol/served.ts). The threads are
 * edgeweave's own: the same objects chat completions, Responses and invoke run on.
 */

const Obj = z.looseObject({}).openapi({ type: "object" });
const Assistant = z.looseObject({ assistant_id: z.string(), graph_id: z.string(), name: z.string() }).openapi("LangGraphAssistant");
const Thread = z.looseObject({ thread_id: z.string(), status: z.string(), metadata: Obj, values: Obj }).openapi("LangGraphThread");
const State = z.looseObject({ values: Obj, checkpoint: Obj }).openapi("LangGraphThreadState");

const jsonBody = <T extends z.ZodType>(schema: T) => ({ required: true, content: { "application/json": { schema } } });
/**
 * The SDK sends some of these bodies only when it has fields to send: absent is the defaults. A request that is
 * not JSON reaches the handler as an unparsed `{}` (zod-openapi skips an optional body), so handlers read it
 * through `sent`, which applies the defaults.
 */
const optionalJsonBody = <T extends z.ZodType>(schema: T) => ({ required: false, content: { "application/json": { schema } } });
const sent = <T extends z.ZodType>(schema: T, body: unknown): z.output<T> => schema.parse(body);

const ThreadParam = z.object({ thread_id: z.string().openapi({ param: { name: "thread_id", in: "path" }, description: "The thread's id" }) });
const AssistantParam = z.object({ assistant_id: z.string().openapi({ param: { name: "assistant_id", in: "path" }, description: "assistant_id or graph_id" }) });
const CheckpointRef = z.object({ checkpoint_id: CheckpointId.nullish(), checkpoint_ns: z.literal("").optional(), thread_id: z.string().optional() }).loose();

/** A thread of the caller's: a valid id, the policy (403 before existence), then its listed record (404 BEM-036). */
export async function existingThread(env: Env, p: Principal, rawId: string, rewrites = false): Promise<{ client: ThreadClient; record: ThreadRecord }> {
  const threadId = parseThreadId(rawId);
  authorizeThread(p, threadId, rewrites);
  const record = await getRecord(env.DB, p.tenant, threadId);
  if (!record) throw new AppError("BEM-036", `No thread '${threadId}'`);
  return { client: new ThreadClient(env, p.tenant, threadId), record };
}

const info = createRoute({
  method: "get",
  path: `${AP}/info`,
  middleware: access("any_key"),
  tags: ["langgraph-api"],
  summary: "What this LangGraph API server is (LangGraph SDK: checks the connection)",
  responses: { 200: jsonContent(Obj, "Version and flags"), ...errorResponses() },
});

const AssistantSearch = z.object({
  graph_id: z.string().max(64).optional(),
  name: z.string().max(64).optional(),
  metadata: Metadata.optional(),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  sort_by: z.enum(["assistant_id", "graph_id", "name", "created_at", "updated_at"]).optional(),
  sort_order: z.enum(["asc", "desc"]).optional(),
  select: z.array(z.string().max(64)).max(16).optional(),
});

const searchAssistants = createRoute({
  method: "post",
  path: `${AP}/assistants/search`,
  middleware: access("any_key", "small"),
  tags: ["langgraph-api"],
  summary: "The assistants: one per agent of models.yaml (graph_id = the agent's name)",
  request: {
    body: optionalJsonBody(AssistantSearch),
  },
  responses: { 200: jsonContent(z.array(Assistant), "Matching assistants"), ...errorResponses() },
});

const getAssistant = createRoute({
  method: "get",
  path: `${AP}/assistants/{assistant_id}`,
  middleware: access("any_key"),
  tags: ["langgraph-api"],
  summary: "One assistant, by assistant_id or graph_id",
  request: { params: AssistantParam },
  responses: { 200: jsonContent(Assistant, "The assistant"), ...errorResponses("BEM-047") },
});

const assistantSchemas = createRoute({
  method: "get",
  path: `${AP}/assistants/{assistant_id}/schemas`,
  middleware: access("any_key"),
  tags: ["langgraph-api"],
  summary: "An assistant's input, state and context schemas",
  request: { params: AssistantParam },
  responses: { 200: jsonContent(Obj, "JSON schemas"), ...errorResponses("BEM-047") },
});

const ThreadCreate = z.object({
  thread_id: z.string().optional(),
  metadata: Metadata.optional(),
  if_exists: z.enum(["raise", "do_nothing"]).default("raise"),
  supersteps: Unserved,
  ttl: Unserved,
});

const createThread = createRoute({
  method: "post",
  path: `${AP}/threads`,
  middleware: access("reach_thread", "small"),
  tags: ["langgraph-api"],
  summary: "Create a thread (listed at once; its object is written by its first run)",
  request: {
    body: optionalJsonBody(ThreadCreate),
  },
  responses: { 200: jsonContent(Thread, "The thread"), ...errorResponses("BEM-017", "BEM-022", "BEM-025", "BEM-030", "BEM-201", "BEM-202") },
});

const ThreadSearch = z.object({
  metadata: Metadata.optional(),
  ids: z.array(z.string().max(128)).max(100).optional(),
  limit: z.number().int().min(1).max(100).default(10),
  offset: z.number().int().min(0).max(100_000).default(0),
  sort_by: SortBy.default("updated_at"),
  sort_order: z.enum(["asc", "desc"]).default("desc"),
  select: z.array(z.string().max(64)).max(16).optional(),
  status: Unserved,
  values: Unserved,
  extract: Unserved,
});

const searchThreads = createRoute({
  method: "post",
  path: `${AP}/threads/search`,
  middleware: access("reach_thread", "small"),
  tags: ["langgraph-api"],
  summary: "The caller's threads whose metadata holds the given keys and values (Agent Chat UI's history: graph_id)",
  request: {
    body: optionalJsonBody(ThreadSearch),
  },
  responses: { 200: jsonContent(z.array(Thread), "A page of threads"), ...errorResponses("BEM-202") },
});

const getThread = createRoute({
  method: "get",
  path: `${AP}/threads/{thread_id}`,
  middleware: access("reach_thread"),
  tags: ["langgraph-api"],
  summary: "A thread: metadata, status and values at the head",
  request: { params: ThreadParam },
  responses: { 200: jsonContent(Thread, "The thread"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036") },
});

const patchThread = createRoute({
  method: "patch",
  path: `${AP}/threads/{thread_id}`,
  middleware: access("reach_thread", "small"),
  tags: ["langgraph-api"],
  summary: "Merge metadata into a thread's",
  request: {
    params: ThreadParam,
    body: jsonBody(z.object({ metadata: Metadata.default({}), ttl: Unserved })),
  },
  responses: { 200: jsonContent(Thread, "The thread"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036", "BEM-202") },
});

const deleteThread = createRoute({
  method: "delete",
  path: `${AP}/threads/{thread_id}`,
  middleware: access("rewrite_thread"),
  tags: ["langgraph-api"],
  summary: "Delete a thread (as DELETE /v1/threads/{id})",
  request: { params: ThreadParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036", "BEM-038", "BEM-171") },
});

const getState = createRoute({
  method: "get",
  path: `${AP}/threads/{thread_id}/state`,
  middleware: access("reach_thread"),
  tags: ["langgraph-api"],
  summary: "The thread's state at the head",
  request: { params: ThreadParam },
  responses: { 200: jsonContent(State, "The state"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036") },
});

const getStateAt = createRoute({
  method: "get",
  path: `${AP}/threads/{thread_id}/state/{checkpoint_id}`,
  middleware: access("reach_thread"),
  tags: ["langgraph-api"],
  summary: "The thread's state at one of its checkpoints",
  request: { params: ThreadParam.extend({ checkpoint_id: CheckpointId.openapi({ param: { name: "checkpoint_id", in: "path" } }) }) },
  responses: { 200: jsonContent(State, "The state"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032", "BEM-036") },
});

const postStateAt = createRoute({
  method: "post",
  path: `${AP}/threads/{thread_id}/state/checkpoint`,
  middleware: access("reach_thread", "small"),
  tags: ["langgraph-api"],
  summary: "The thread's state at a checkpoint given as an object",
  request: {
    params: ThreadParam,
    body: jsonBody(z.object({ checkpoint: CheckpointRef, subgraphs: z.boolean().optional() })),
  },
  responses: { 200: jsonContent(State, "The state"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032", "BEM-036") },
});

const updateState = createRoute({
  method: "post",
  path: `${AP}/threads/{thread_id}/state`,
  middleware: access("rewrite_thread", "conversation"),
  tags: ["langgraph-api"],
  summary: "Update the state: append or replace messages (by id), write other channels; one checkpoint",
  request: {
    params: ThreadParam,
    body: jsonBody(
      z.object({
        values: z.record(z.string().max(64), z.unknown()).nullable(),
        checkpoint: Unserved,
        checkpoint_id: Unserved,
        as_node: Unserved,
      }),
    ),
  },
  responses: {
    200: jsonContent(z.object({ checkpoint: Obj, configurable: Obj }), "The new checkpoint"),
    ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032", "BEM-033", "BEM-034", "BEM-035", "BEM-036", "BEM-037", "BEM-038"),
  },
});

const HistoryQuery = z.object({
  limit: z.number().int().min(1).max(100).default(10),
  before: z
    .union([
      CheckpointId,
      z.object({ configurable: CheckpointRef }).transform((v) => v.configurable.checkpoint_id ?? undefined),
      CheckpointRef.transform((v) => v.checkpoint_id ?? undefined),
    ])
    .optional()
    .openapi({ description: "A checkpoint id, a checkpoint, or a config with configurable.checkpoint_id (the SDK's)" }),
  checkpoint: CheckpointRef.optional(),
  metadata: Unserved,
  select: Unserved,
});

const history = createRoute({
  method: "post",
  path: `${AP}/threads/{thread_id}/history`,
  middleware: access("reach_thread", "small"),
  tags: ["langgraph-api"],
  summary: "The thread's checkpoints of every branch, newest first, each with its state",
  request: {
    params: ThreadParam,
    body: optionalJsonBody(HistoryQuery),
  },
  responses: { 200: jsonContent(z.array(State), "States, newest first"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032", "BEM-036", "BEM-202") },
});

/** Only the fields `select` names (LangGraph's `select`); all without it. */
function pick<T extends Record<string, unknown>>(o: T, select: string[] | undefined): Partial<T> {
  return select ? (Object.fromEntries(Object.entries(o).filter(([k]) => select.includes(k))) as Partial<T>) : o;
}

/** The channel writes of a state update: `messages` appended (a message with a stored id replaces it), other keys set. */
function updateOps(values: Record<string, unknown>) {
  const ops: ({ op: "append"; messages: ReturnType<typeof toInput>[] } | { op: "set"; channel: string; value: unknown })[] = [];
  for (const [channel, value] of Object.entries(values)) {
    if (channel !== "messages") {
      ops.push({ op: "set", channel, value });
      continue;
    }
    const list = z
      .array(LangChainMessage)
      .max(1000)
      .safeParse(Array.isArray(value) ? value : [value]);
    if (!list.success) throw new AppError("BEM-035", `values.messages: ${list.error.issues[0]?.message ?? "invalid message"}`);
    if (list.data.length > 0) ops.push({ op: "append", messages: list.data.map(toInput) });
  }
  return ops;
}

export const threadApiRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(info, (c) => c.json({ version: "edgeweave", langgraph_py_version: null, flags: { assistants: true, crons: false, langsmith: false } }, 200))
  .openapi(searchAssistants, async (c) => {
    const q = sent(AssistantSearch, c.req.valid("json"));
    let list = await allAssistants();
    if (q.graph_id) list = list.filter((a) => a.graph_id === q.graph_id);
    if (q.name) list = list.filter((a) => a.name.includes(q.name!));
    if (q.metadata)
      list = list.filter((a) =>
        Object.entries(q.metadata!).every(([k, v]) => JSON.stringify((a.metadata as Record<string, unknown>)[k]) === JSON.stringify(v)),
      );
    if (q.sort_by) {
      const key = q.sort_by;
      list.sort((a, b) => String(a[key]).localeCompare(String(b[key])) * (q.sort_order === "desc" ? -1 : 1));
    }
    return c.json(list.slice(q.offset, q.offset + q.limit).map((a) => pick(a, q.select)) as z.infer<typeof Assistant>[], 200);
  })
  .openapi(getAssistant, async (c) => c.json((await requireAssistant(c.req.valid("param").assistant_id)).assistant, 200))
  .openapi(assistantSchemas, async (c) => c.json(schemasOf((await requireAssistant(c.req.valid("param").assistant_id)).agent), 200))
  .openapi(createThread, async (c) => {
    const p = c.get("principal");
    const body = sent(ThreadCreate, c.req.valid("json"));
    refuseUnserved(body, { supersteps: "run the thread, or POST /threads/{id}/state", ttl: "threads stay until deleted (DELETE /threads/{id})" });
    const threadId = parseThreadId(body.thread_id ?? crypto.randomUUID());
    authorizeThread(p, threadId, false);
    await assertThreadRoom(c.env, p.tenant, threadId);
    if (!(await insertRecord(c.env.DB, p.tenant, threadId, body.metadata ?? {})) && body.if_exists === "raise")
      throw new AppError("BEM-201", `Thread '${threadId}' exists; send if_exists: "do_nothing" to get it`);
    const { client, record } = await existingThread(c.env, p, threadId);
    // Its object knows it too, so a run admits it in the one call it makes there (ThreadDO.runAdmit).
    await client.apiThreadCreated();
    return c.json(await threadOf(client, p, record), 200);
  })
  .openapi(searchThreads, async (c) => {
    const p = c.get("principal");
    const q = sent(ThreadSearch, c.req.valid("json"));
    refuseUnserved(q, {
      status: "search by metadata; GET /threads/{id} tells a thread's status",
      values: "search by metadata",
      extract: "read the values of each thread found",
    });
    const records = await searchRecords(c.env.DB, p.tenant, {
      ...(q.metadata ? { metadata: q.metadata } : {}),
      ...(q.ids ? { ids: q.ids } : {}),
      limit: q.limit,
      offset: q.offset,
      sortBy: q.sort_by,
      sortOrder: q.sort_order,
      only: readableThreads(p),
    });
    const threads = await Promise.all(records.map((r) => threadOf(new ThreadClient(c.env, p.tenant, r.thread_id), p, r)));
    return c.json(threads.map((t) => pick(t, q.select)) as z.infer<typeof Thread>[], 200);
  })
  .openapi(getThread, async (c) => {
    const p = c.get("principal");
    const { client, record } = await existingThread(c.env, p, c.req.valid("param").thread_id);
    return c.json(await threadOf(client, p, record), 200);
  })
  .openapi(patchThread, async (c) => {
    const p = c.get("principal");
    const body = c.req.valid("json");
    refuseUnserved(body, { ttl: "threads stay until deleted (DELETE /threads/{id})" });
    const { client } = await existingThread(c.env, p, c.req.valid("param").thread_id);
    await mergeMetadata(c.env.DB, p.tenant, client.threadId, body.metadata);
    const record = await getRecord(c.env.DB, p.tenant, client.threadId);
    if (!record) throw new AppError("BEM-036", `No thread '${client.threadId}'`);
    return c.json(await threadOf(client, p, record), 200);
  })
  .openapi(deleteThread, async (c) => {
    const { client } = await existingThread(c.env, c.get("principal"), c.req.valid("param").thread_id, true);
    await client.destroy();
    return c.body(null, 204);
  })
  .openapi(getState, async (c) => {
    const p = c.get("principal");
    const { client } = await existingThread(c.env, p, c.req.valid("param").thread_id);
    return c.json(await stateAt(client, p), 200);
  })
  .openapi(getStateAt, async (c) => {
    const p = c.get("principal");
    const { thread_id, checkpoint_id } = c.req.valid("param");
    const { client } = await existingThread(c.env, p, thread_id);
    return c.json(await stateAt(client, p, checkpoint_id), 200);
  })
  .openapi(postStateAt, async (c) => {
    const p = c.get("principal");
    const { client } = await existingThread(c.env, p, c.req.valid("param").thread_id);
    return c.json(await stateAt(client, p, c.req.valid("json").checkpoint.checkpoint_id ?? undefined), 200);
  })
  .openapi(updateState, async (c) => {
    const p = c.get("principal");
    const body = c.req.valid("json");
    refuseUnserved(body, {
      as_node: "updates are written as the thread's own (source update)",
      checkpoint: "update at the head; to branch from an earlier checkpoint, run from it (checkpoint on the run) or POST /v1/threads/{id}/fork",
      checkpoint_id: "update at the head; to branch from an earlier checkpoint, run from it (checkpoint on the run) or POST /v1/threads/{id}/fork",
    });
    const { client } = await existingThread(c.env, p, c.req.valid("param").thread_id, true);
    const ops = updateOps(body.values ?? {});
    if (ops.length === 0) throw new AppError("BEM-035", "values holds nothing to write");
    const cp = await client.update({ ops }, "update");
    // LangGraph's server answers `checkpoint`; the SDK's type reads `configurable`: both, the same.
    const ref = checkpointRef(client.threadId, cp.id);
    return c.json({ checkpoint: ref, configurable: ref }, 200);
  })
  .openapi(history, async (c) => {
    const p = c.get("principal");
    const body = sent(HistoryQuery, c.req.valid("json"));
    refuseUnserved(body, { metadata: "read the history and filter it", select: "read whole states" });
    const { client } = await existingThread(c.env, p, c.req.valid("param").thread_id);
    const before = body.before;
    const from = body.checkpoint?.checkpoint_id ?? undefined;
    return c.json(await historyOf(client, p, { limit: body.limit, ...(before ? { before } : {}), ...(from ? { from } : {}) }), 200);
  });
