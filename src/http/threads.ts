import { createRoute, OpenAPIHono, z, type Hook } from "@hono/zod-openapi";
import type { Principal } from "../core/principal";
import { authorizeThread, readableThreads } from "../auth/policy";
import { AppError } from "../core/errors";
import { ThreadClient } from "../thread/client";
import { listThreads, ThreadKind, ThreadList } from "../thread/thread-list";
import { parseThreadId } from "../thread/thread-id";
import { Checkpoint, CheckpointId, History, ThreadUpdate, ThreadState } from "../thread/types";
import { access } from "../edge/access";
import { historyFor, stateFor } from "./memory-view";
import { chargeOps } from "../auth/rate-limit";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { issueSummary, sentValue, validationHook } from "../edge/validation";
import { assertThreadRoom } from "../auth/quotas";

// Thread ids are checked in the handler so a bad one gets its own code (BEM-030), not BEM-011.
const ThreadParam = z.object({
  id: z.string().openapi({ param: { name: "id", in: "path" }, description: "1-128 chars of A-Z a-z 0-9 . _ : -", example: "support-42" }),
});
const Limit = z.coerce.number().int().min(1).max(100).optional();

/** A bad update body is a bad operation (BEM-035); anything else goes through the shared hook. */
const opsHook: Hook<unknown, AppEnv, string, undefined> = (result, c) => {
  if (!result.success && result.target === "json") throw new AppError("BEM-035", issueSummary(result.error, sentValue(result)));
  validationHook(result, c);
  return undefined;
};

/**
 * The caller's thread, checked in this order: a valid id (BEM-030), the policy (403,
 * before existence, so a refusal reveals nothing), then existence — the thread's own
 * object is the truth (the D1 list is bookkeeping for listing): no checkpoint, no thread.
 */
async function existingThread(env: Env, p: Principal, rawId: string, rewrites: boolean): Promise<ThreadClient> {
  const threadId = parseThreadId(rawId);
  authorizeThread(p, threadId, rewrites);
  const client = new ThreadClient(env, p.tenant, threadId);
  if (!(await client.exists())) throw new AppError("BEM-036", `No thread '${client.threadId}'`);
  return client;
}

const listThreadsRoute = createRoute({
  method: "get",
  path: "/v1/threads",
  middleware: access("reach_thread"),
  tags: ["threads"],
  summary: "List the threads the key may reach (all of the tenant's for an admin), most recently updated first",
  request: {
    query: z.strictObject({
      limit: Limit,
      before: z.string().max(200).optional(),
      query: z.string().max(128).optional().openapi({ description: "Only ids containing this text (any case); ids only, never message text" }),
      kind: ThreadKind.optional().openapi({ description: "Only conversations, or only one-off Responses calls' threads (kept 30 days)" }),
    }),
  },
  responses: { 200: jsonContent(ThreadList, "A page of threads"), ...errorResponses("BEM-022") },
});

const getState = createRoute({
  method: "get",
  path: "/v1/threads/{id}/state",
  middleware: access("reach_thread"),
  tags: ["threads"],
  summary: "Thread state at the head, or at any checkpoint",
  request: { params: ThreadParam, query: z.strictObject({ checkpoint_id: CheckpointId.optional() }) },
  responses: { 200: jsonContent(ThreadState, "Channels at the checkpoint"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032", "BEM-036") },
});

const getHistory = createRoute({
  method: "get",
  path: "/v1/threads/{id}/history",
  middleware: access("reach_thread"),
  tags: ["threads"],
  summary: "Checkpoints of every branch, newest first, paged",
  request: { params: ThreadParam, query: z.strictObject({ limit: Limit, before: CheckpointId.optional() }) },
  responses: { 200: jsonContent(History, "A page of checkpoints"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036") },
});

const updateState = createRoute({
  method: "post",
  path: "/v1/threads/{id}/state",
  middleware: access("rewrite_thread", "conversation", { idempotent: true }),
  tags: ["threads"],
  summary: "Apply channel operations (administrative repair); writes one checkpoint",
  request: {
    params: ThreadParam,
    body: { required: true, content: { "application/json": { schema: ThreadUpdate } } },
  },
  responses: {
    200: jsonContent(Checkpoint, "The new head checkpoint"),
    ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-031", "BEM-033", "BEM-034", "BEM-035", "BEM-037", "BEM-038"),
  },
});

const forkThread = createRoute({
  method: "post",
  path: "/v1/threads/{id}/fork",
  middleware: access("rewrite_thread", "small", { idempotent: true }),
  tags: ["threads"],
  summary: "Continue from an old checkpoint as a new branch (the old one stays in history)",
  request: {
    params: ThreadParam,
    body: { required: true, content: { "application/json": { schema: z.object({ checkpoint_id: CheckpointId }) } } },
  },
  responses: { 200: jsonContent(Checkpoint, "The new head checkpoint"), ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032", "BEM-036", "BEM-038") },
});

const deleteThread = createRoute({
  method: "delete",
  path: "/v1/threads/{id}",
  middleware: access("rewrite_thread"),
  tags: ["threads"],
  summary: "Delete the thread: messages, channels and checkpoints",
  request: { params: ThreadParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036", "BEM-038", "BEM-171") },
});

/**
 * Appended messages that weigh one op of a state update. Importing history is this route's job and
 * only an admin may call it (rewrite_thread): counted one op a message (one request per 10), a
 * 20,000-message import spent 2,000 of an admin's 600 a minute. Per 100 it is one request per started
 * 1,000 messages, and a request holds at most ~3,300 (its 1 MiB body and 10,000 JSON items).
 */
export const MESSAGES_PER_OP = 100;

/** What a state update counts against the rate limit (one request per started 10): each op, an append's messages per MESSAGES_PER_OP. */
const opsIn = (u: { ops: { op: string; messages?: unknown[] }[] }): number => {
  const appended = u.ops.reduce((n, o) => n + (o.op === "append" ? (o.messages?.length ?? 1) : 0), 0);
  return u.ops.filter((o) => o.op !== "append").length + Math.ceil(appended / MESSAGES_PER_OP);
};

// Own sub-app so a bad update body is reported with opsHook (BEM-035).
const stateWrites = new OpenAPIHono<AppEnv>({ defaultHook: opsHook }).openapi(updateState, async (c) => {
  const principal = c.get("principal");
  const threadId = parseThreadId(c.req.valid("param").id);
  authorizeThread(principal, threadId, true);
  await chargeOps(c.env, principal, opsIn(c.req.valid("json")));
  const thread = new ThreadClient(c.env, principal.tenant, threadId);
  await assertThreadRoom(c.env, principal.tenant, thread.threadId);
  return c.json(await thread.update(c.req.valid("json"), "update"), 200);
});

/** Short-term memory admin: read, repair, fork and delete threads of the caller's tenant. */
export const threadRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listThreadsRoute, async (c) => {
    const { query, ...page } = c.req.valid("query");
    const p = c.get("principal");
    return c.json(await listThreads(c.env.DB, p.tenant, { ...page, only: readableThreads(p), ...(query ? { idContains: query } : {}) }), 200);
  })
  .openapi(getState, async (c) => {
    const principal = c.get("principal");
    const thread = await existingThread(c.env, principal, c.req.valid("param").id, false);
    return c.json(stateFor(principal, await thread.getState(c.req.valid("query").checkpoint_id)), 200);
  })
  .openapi(getHistory, async (c) => {
    const principal = c.get("principal");
    const thread = await existingThread(c.env, principal, c.req.valid("param").id, false);
    return c.json(historyFor(principal, await thread.getHistory(c.req.valid("query"))), 200);
  })
  .route("/", stateWrites)
  .openapi(forkThread, async (c) => {
    const principal = c.get("principal");
    const thread = await existingThread(c.env, principal, c.req.valid("param").id, true);
    return c.json(await thread.fork(c.req.valid("json").checkpoint_id), 200);
  })
  .openapi(deleteThread, async (c) => {
    const principal = c.get("principal");
    const thread = await existingThread(c.env, principal, c.req.valid("param").id, true);
    await thread.destroy();
    return c.body(null, 204);
  });
