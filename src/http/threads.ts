import { createRoute, OpenAPIHono, z, type Hook } from "@hono/zod-openapi";
import { AppError, catalog, type ErrorCode } from "../errors";
import { ThreadClient } from "../thread/client";
import { listThreads, ThreadList } from "../thread/registry";
import { parseThreadId } from "../thread/thread-id";
import { Checkpoint, CheckpointId, History, StateUpdate, ThreadState } from "../thread/types";
import type { AppEnv } from "./app-env";
import { ADMIN_ROLES, requireRole } from "./roles";
import { validationHook } from "./validation";

/** Short-term memory admin: read, repair, fork and delete threads of the caller's tenant. */
export const threadRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

const ErrorBody = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .openapi("Error");

/** OpenAPI error responses for the given codes, grouped by status. */
function errors(...codes: ErrorCode[]) {
  const byStatus = new Map<number, string[]>();
  for (const code of ["BEM-011", "BEM-020", "BEM-021", ...codes] as ErrorCode[]) {
    const status = catalog[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), `${code} ${catalog[code].meaning}`]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, lines]) => [
      status,
      { description: lines.join("; "), content: { "application/json": { schema: ErrorBody } } },
    ]),
  );
}

// Thread ids are checked in the handler so a bad one gets its own code (BEM-030), not BEM-011.
const ThreadParam = z.object({
  id: z.string().openapi({ param: { name: "id", in: "path" }, description: "1-128 chars of A-Z a-z 0-9 . _ : -", example: "support-42" }),
});
const Limit = z.coerce.number().int().min(1).max(100).optional();

/** A bad update body is a bad operation (BEM-035); anything else goes through the shared hook. */
const opsHook: Hook<unknown, AppEnv, string, undefined> = (result, c) => {
  if (!result.success && result.target === "json") {
    const issues = result.error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
    throw new AppError("BEM-035", issues.join("; "));
  }
  validationHook(result, c);
  return undefined;
};

/** The thread's own object is the truth (the D1 list is bookkeeping for listing): no checkpoint, no thread. */
async function existingThread(env: Env, tenant: string, rawId: string): Promise<ThreadClient> {
  const client = new ThreadClient(env, tenant, parseThreadId(rawId));
  if ((await client.getHistory({ limit: 1 })).checkpoints.length === 0) throw new AppError("BEM-036", `No thread '${client.threadId}'`);
  return client;
}

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

threadRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/threads",
    tags: ["threads"],
    summary: "List the tenant's threads, most recently updated first",
    request: { query: z.object({ limit: Limit, before: z.string().max(200).optional() }) },
    responses: { 200: json(ThreadList, "A page of threads"), ...errors() },
  }),
  async (c) => {
    const q = c.req.valid("query");
    return c.json(await listThreads(c.env.DB, c.get("principal").tenant, q), 200);
  },
);

threadRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/threads/{id}/state",
    tags: ["threads"],
    summary: "Thread state at the head, or at any checkpoint",
    request: { params: ThreadParam, query: z.object({ checkpoint_id: CheckpointId.optional() }) },
    responses: { 200: json(ThreadState, "Channels at the checkpoint"), ...errors("BEM-030", "BEM-032", "BEM-036") },
  }),
  async (c) => {
    const thread = await existingThread(c.env, c.get("principal").tenant, c.req.valid("param").id);
    return c.json(await thread.getState(c.req.valid("query").checkpoint_id), 200);
  },
);

threadRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/threads/{id}/history",
    tags: ["threads"],
    summary: "Checkpoints of every branch, newest first, paged",
    request: { params: ThreadParam, query: z.object({ limit: Limit, before: CheckpointId.optional() }) },
    responses: { 200: json(History, "A page of checkpoints"), ...errors("BEM-030", "BEM-036") },
  }),
  async (c) => {
    const thread = await existingThread(c.env, c.get("principal").tenant, c.req.valid("param").id);
    return c.json(await thread.getHistory(c.req.valid("query")), 200);
  },
);

// Own sub-app so a bad update body is reported with opsHook (BEM-035).
const stateWrites = new OpenAPIHono<AppEnv>({ defaultHook: opsHook });
stateWrites.openapi(
  createRoute({
    method: "post",
    path: "/v1/threads/{id}/state",
    tags: ["threads"],
    summary: "Apply channel operations (administrative repair); writes one checkpoint",
    request: {
      params: ThreadParam,
      body: { required: true, content: { "application/json": { schema: StateUpdate } } },
    },
    responses: {
      200: json(Checkpoint, "The new head checkpoint"),
      ...errors("BEM-022", "BEM-030", "BEM-031", "BEM-033", "BEM-034", "BEM-035", "BEM-037"),
    },
  }),
  async (c) => {
    const principal = c.get("principal");
    requireRole(principal, ADMIN_ROLES, "change thread state");
    const thread = new ThreadClient(c.env, principal.tenant, c.req.valid("param").id);
    return c.json(await thread.update(c.req.valid("json"), "update"), 200);
  },
);
threadRoutes.route("/", stateWrites);

threadRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/threads/{id}/fork",
    tags: ["threads"],
    summary: "Continue from an old checkpoint as a new branch (the old one stays in history)",
    request: {
      params: ThreadParam,
      body: { required: true, content: { "application/json": { schema: z.object({ checkpoint_id: CheckpointId }) } } },
    },
    responses: { 200: json(Checkpoint, "The new head checkpoint"), ...errors("BEM-022", "BEM-030", "BEM-032", "BEM-036") },
  }),
  async (c) => {
    const principal = c.get("principal");
    requireRole(principal, ADMIN_ROLES, "fork a thread");
    const thread = await existingThread(c.env, principal.tenant, c.req.valid("param").id);
    return c.json(await thread.fork(c.req.valid("json").checkpoint_id), 200);
  },
);

threadRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/threads/{id}",
    tags: ["threads"],
    summary: "Delete the thread: messages, channels and checkpoints",
    request: { params: ThreadParam },
    responses: { 204: { description: "Deleted" }, ...errors("BEM-022", "BEM-030", "BEM-036") },
  }),
  async (c) => {
    const principal = c.get("principal");
    requireRole(principal, ADMIN_ROLES, "delete a thread");
    const thread = await existingThread(c.env, principal.tenant, c.req.valid("param").id);
    await thread.destroy();
    return c.body(null, 204);
  },
);
