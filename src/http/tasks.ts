import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { authorize, authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import { D1FactsBackend } from "../memory/d1-facts-backend";
import { RememberOptionFields, rememberInput } from "../memory/facts";
import { MemoryScope } from "../memory/scope";
import { enqueueTask } from "../queue/messages";
import { listDeadLetters, taskStatus } from "../tasks/store";
import { parseThreadId } from "../thread/thread-id";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { pageOf, pageQuery, pageStart } from "./paging";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { assertFactRoom } from "../auth/quotas";

/**
 * Background work on the TASKS queue: asynchronous remember/forget and thread
 * summaries (checked now, run later: 202 {task_id}); task status; the tenant's
 * dead letters. Admin and operator keys only.
 */

/**
 * Strict, as admin bodies are: a field not listed is BEM-011 naming it, never dropped. A queued
 * remember takes what POST /v1/memory/facts takes — a `key` that replaces, `ttl_seconds` or
 * `expires_at` — checked the same way before it is queued.
 */
const MemoryTaskBody = z
  .discriminatedUnion("op", [
    z.strictObject({
      op: z.literal("remember"),
      scope: z.string().min(1).max(200).openapi({ example: "organization:acme" }),
      kind: z.string().max(32).openapi({ example: "style" }),
      text: z.string().max(16_384).openapi({ description: "1 to 8192 bytes of UTF-8" }),
      ...RememberOptionFields,
    }),
    z.strictObject({ op: z.literal("forget"), fact_id: z.string().min(1).max(200) }),
  ])
  .openapi("MemoryTask");
const SummarizeBody = z
  .strictObject({
    thread_id: z.string().min(1).max(128),
    keep_messages: z.number().int().min(1).max(1000).optional().openapi({ description: "Newest messages kept verbatim (default 6)" }),
    model: z.string().max(128).optional(),
  })
  .openapi("SummarizeTask");
const Enqueued = z.object({ task_id: z.string() }).openapi("TaskEnqueued");
const TaskStatus = z
  .object({ task_id: z.string(), status: z.enum(["pending", "done", "dead_lettered"]), result: z.unknown().optional(), reason: z.string().optional() })
  .openapi("TaskStatus");
const DeadLetterView = z
  .object({
    id: z.string(),
    task_id: z.string().nullable(),
    kind: z.string().nullable(),
    body: z.string(),
    reason: z.string(),
    attempts: z.number().int(),
    created_at: z.number().int(),
  })
  .openapi("DeadLetter");

const queueMemoryTask = createRoute({
  method: "post",
  path: "/v1/memory/tasks",
  middleware: access("queue_tasks", "small", { idempotent: true }),
  tags: ["tasks"],
  summary: "Remember or forget a fact in the background",
  description: "Checked now (scope, grants, kind, text, the fact's existence), applied by the queue consumer. Poll GET /v1/tasks/{id}.",
  request: { body: { content: { "application/json": { schema: MemoryTaskBody } }, required: true } },
  responses: {
    202: jsonContent(Enqueued, "Queued"),
    ...errorResponses("BEM-018", "BEM-022", "BEM-023", "BEM-060", "BEM-061", "BEM-062", "BEM-063", "BEM-064", "BEM-140", "BEM-141"),
  },
});

const queueSummary = createRoute({
  method: "post",
  path: "/v1/tasks/summarize",
  middleware: access("rewrite_thread", "small", { idempotent: true }),
  tags: ["tasks"],
  summary: "Summarize a thread in the background",
  description:
    "Replaces the older messages with one system summary, keeping the newest `keep_messages`, as one checkpoint (the one before it still holds everything).",
  request: { body: { content: { "application/json": { schema: SummarizeBody } }, required: true } },
  responses: { 202: jsonContent(Enqueued, "Queued"), ...errorResponses("BEM-022", "BEM-030") },
});

const listDeadLettersRoute = createRoute({
  method: "get",
  path: "/v1/tasks/dead-letters",
  middleware: access("queue_tasks"),
  tags: ["tasks"],
  summary: "The tenant's dead-lettered tasks, newest first",
  request: { query: z.strictObject(pageQuery("Dead letters", 200, 50)) },
  responses: {
    200: jsonContent(z.object({ dead_letters: z.array(DeadLetterView), next_cursor: z.string().nullable() }).openapi("DeadLetterPage"), "A page"),
    ...errorResponses("BEM-022"),
  },
});

const getTaskStatus = createRoute({
  method: "get",
  path: "/v1/tasks/{id}",
  middleware: access("queue_tasks"),
  tags: ["tasks"],
  summary: "A task's status: pending, done (with its result) or dead_lettered (with the reason)",
  request: {
    params: z.object({
      id: z
        .string()
        .min(1)
        .max(200)
        .openapi({ param: { name: "id", in: "path" } }),
    }),
    query: z.strictObject({}),
  },
  responses: { 200: jsonContent(TaskStatus, "The status"), ...errorResponses("BEM-022") },
});

/** The task routes, as one chain (see the top of this file). */
export const taskRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(queueMemoryTask, async (c) => {
    const body = c.req.valid("json");
    const p = c.get("principal");
    if (body.op === "remember") {
      // The expiry is fixed now, as the synchronous remember fixes it: a task that waits or is retried does not move it.
      const { scope, kind: fact_kind, text, key, expiresAt } = rememberInput(body, Date.now());
      authorize(p, "write_scope", { scope });
      // Checked here so the caller hears it at once; the task checks again when it runs.
      await assertFactRoom(c.env, p.tenant, new D1FactsBackend(c.env.DB, p.tenant), scope, key);
      const task_id = await enqueueTask(c.env, {
        kind: "remember_memory",
        tenant: p.tenant,
        scope: scope.toString(),
        fact_kind,
        text,
        written_by: p.role,
        ...(key !== null ? { key } : {}),
        ...(expiresAt !== null ? { expires_at: expiresAt } : {}),
      });
      return c.json({ task_id }, 202);
    }
    const fact = await new D1FactsBackend(c.env.DB, p.tenant).get(body.fact_id);
    if (!fact) throw new AppError("BEM-061", "No such fact");
    authorize(p, "write_scope", { scope: MemoryScope.parse(fact.scope) });
    return c.json({ task_id: await enqueueTask(c.env, { kind: "forget_memory", tenant: p.tenant, fact_id: body.fact_id }) }, 202);
  })
  .openapi(queueSummary, async (c) => {
    const body = c.req.valid("json");
    const p = c.get("principal");
    // Summarizing replaces stored messages: the rewrite right on this very thread.
    const threadId = parseThreadId(body.thread_id);
    authorizeThread(p, threadId, true);
    const task_id = await enqueueTask(c.env, {
      kind: "summarize_thread",
      tenant: p.tenant,
      thread_id: threadId,
      ...(body.keep_messages !== undefined ? { keep_messages: body.keep_messages } : {}),
      ...(body.model !== undefined ? { model: body.model } : {}),
    });
    return c.json({ task_id }, 202);
  })
  .openapi(listDeadLettersRoute, async (c) => {
    const q = c.req.valid("query");
    const p = c.get("principal");
    const limit = q.limit ?? 50;
    const { items: dead_letters, next_cursor } = pageOf(
      "dead_letters",
      await listDeadLetters(c.env.DB, p.tenant, limit + 1, pageStart("dead_letters", q.cursor)),
      limit,
    );
    return c.json({ dead_letters, next_cursor }, 200);
  })
  .openapi(getTaskStatus, async (c) => {
    const { id } = c.req.valid("param");
    const p = c.get("principal");
    // Unknown ids and other tenants' ids read as pending: nothing leaks.
    return c.json({ task_id: id, ...(await taskStatus(c.env.DB, p.tenant, id)) }, 200);
  });
