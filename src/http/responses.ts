import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import { type ResponseTemplate, routingOf, type TraceLevel, type TurnInput, type TurnResult } from "../pipeline/turn";
import { requireKnownModel } from "../routing/closest-models";
import { messagesToItems } from "../responses/convert";
import { asStored, nowSeconds, requestEcho, responseBody, statusOf } from "../responses/body";
import { planResponse } from "../responses/plan";
import { deleteResponse, requireResponse } from "../responses/store";
import { itemBase, responseId, threadOfResponse } from "../responses/ids";
import { ThreadClient } from "../thread/client";
import { access } from "../edge/access";
import { TraceHeader } from "../edge/chat-schemas";
import { responseFor } from "./memory-view";
import type { AppEnv } from "../edge/app-env";
import { type Principal, tenantOf } from "../core/principal";
import { listPage } from "./paging";
import { errorResponses, jsonContent, jsonOrEventStream } from "../edge/openapi-errors";
import { IdParam, ListQuery, ResponseCreateRequest, ResponseObject } from "../edge/responses-schemas";
import { responsesRenderer } from "./responses-stream";
import { RUN_ERRORS, serveTurn, streamErrorBody, type WireFormat } from "./turn-edge";
import { validationHook } from "../edge/validation";
import { randomHex } from "../core/encoding";

const RESPONSE_ERRORS = [...RUN_ERRORS, "BEM-025", "BEM-030", "BEM-100", "BEM-101", "BEM-102", "BEM-103", "BEM-105", "BEM-109"] as const;

const create = createRoute({
  method: "post",
  path: "/v1/responses",
  middleware: access("run", "conversation", { idempotent: true }),
  tags: ["responses"],
  summary: "Create a response (OpenAI Responses API; a response is a checkpoint of a thread)",
  request: {
    headers: TraceHeader.extend({
      "x-thread-id": z.string().optional().openapi({
        description:
          "The thread, as on chat: a new id starts it, an existing one continues it (resent history reconciled). With `conversation` or `previous_response_id` it must name their thread (else 400 BEM-103)",
      }),
    }),
    body: { content: { "application/json": { schema: ResponseCreateRequest } }, required: true },
  },
  responses: {
    200: jsonOrEventStream(ResponseObject, "A Response; with stream: true, the Responses event sequence as SSE"),
    ...errorResponses(...RESPONSE_ERRORS),
  },
});
const retrieve = createRoute({
  method: "get",
  path: "/v1/responses/{id}",
  middleware: access("reach_thread"),
  tags: ["responses"],
  summary: "A stored response",
  request: { params: IdParam },
  responses: { 200: jsonContent(ResponseObject, "The Response as it was returned"), ...errorResponses("BEM-022", "BEM-025", "BEM-100") },
});
const remove = createRoute({
  method: "delete",
  path: "/v1/responses/{id}",
  middleware: access("rewrite_thread"),
  tags: ["responses"],
  summary: "Delete a stored response (the thread's checkpoints stay)",
  request: { params: IdParam },
  responses: {
    200: jsonContent(z.object({ id: z.string(), object: z.literal("response.deleted"), deleted: z.literal(true) }), "Deleted"),
    ...errorResponses("BEM-022", "BEM-025", "BEM-100"),
  },
});
const inputItems = createRoute({
  method: "get",
  path: "/v1/responses/{id}/input_items",
  middleware: access("reach_thread"),
  tags: ["responses"],
  summary: "The input items of a stored response",
  request: {
    params: IdParam,
    query: ListQuery,
  },
  responses: {
    200: jsonContent(
      z.object({
        object: z.literal("list"),
        data: z.array(z.record(z.string(), z.unknown())),
        first_id: z.string().nullable(),
        last_id: z.string().nullable(),
        has_more: z.boolean(),
      }),
      "Input items",
    ),
    ...errorResponses("BEM-022", "BEM-025", "BEM-100"),
  },
});

const responsesTenant = (principal: Principal): string => tenantOf(principal, "Responses belong to tenants; use a tenant key");

type Reached = { id: string; thread: ThreadClient | null; body: Record<string, unknown>; input: unknown[] };

/**
 * A stored response the caller may see: on a thread its grants reach (else 403 BEM-025), of its
 * tenant (else 404 BEM-100). The id names the thread, so the grant is checked before anything is
 * read; a response stored before ids named threads is looked up in D1 first. `rewrites`: the caller
 * changes what the thread keeps (a delete), which also needs rewrite_thread.
 */
async function reachableResponse(c: { env: Env; get(k: "principal"): AppEnv["Variables"]["principal"] }, id: string, rewrites = false): Promise<Reached> {
  const principal = c.get("principal");
  const tenant = responsesTenant(principal);
  const threadId = threadOfResponse(id);
  if (threadId === null) {
    const rec = await requireResponse(c.env.DB, tenant, id);
    authorizeThread(principal, rec.thread_id, rewrites);
    return { id, thread: null, body: asStored(rec.body), input: rec.input }; // records from before held instructions
  }
  authorizeThread(principal, threadId, rewrites);
  const thread = new ThreadClient(c.env, tenant, threadId);
  const rec = await thread.getResponse(id);
  if (!rec) throw new AppError("BEM-100", `No response '${id.slice(0, 80)}'`);
  return { id, thread, body: JSON.parse(rec.body) as Record<string, unknown>, input: JSON.parse(rec.input) as unknown[] };
}

type Plan = { template: ResponseTemplate; store: boolean; trace: TraceLevel };

/**
 * The answer's routing at the level asked for (the edge's `trace`): the stored record keeps the
 * summary, since the full trace is never stored, so it is added to this call's answer only.
 */
const traced = (body: Record<string, unknown>, r: TurnResult, trace: TraceLevel): Record<string, unknown> =>
  trace === "full" ? { ...body, edgeweave: { ...(body.edgeweave as object), routing: routingOf(r, "full") } } : body;

/** The OpenAI Responses API as a wire format (src/http/turn-edge.ts). */
const responsesFormat: WireFormat<{ json: ResponseCreateRequest; threadHeader: string | undefined }, Plan> = {
  async parse({ json: body, threadHeader }, edge) {
    requireKnownModel(body.model);
    const { principal, timings, bookmark } = edge.base();
    const plan = await planResponse(edge.env, principal, timings, body, { bookmark, threadHeader });
    const hexId = randomHex();
    // A stored response's id names its thread (responses/ids.ts); the record is kept in that thread's object.
    const stored = plan.store ? plan.turn.threadId : undefined;
    const template: ResponseTemplate = {
      id: responseId(hexId, stored),
      item: itemBase(hexId, stored),
      created_at: nowSeconds(),
      echo: requestEcho(body, plan),
      input: messagesToItems(plan.input, `in_${hexId}`),
    };
    // A stored turn's record is written by the run's own save, atomically with its checkpoint (no second call).
    const turn: TurnInput = plan.store ? { ...plan.turn, responses: { ...plan.turn.responses, record: template } } : plan.turn;
    return { turn, stream: body.stream === true, plan: { template, store: plan.store, trace: edge.trace(body.trace) } };
  },
  // A stored turn's answer is the record its save stored (instructions aside); any other is rendered here.
  render: (r, { template, store, trace }) => traced(r.response ?? responseBody(template, store, r.model.name, statusOf(r), r), r, trace),
  stream: ({ template, store, trace }) =>
    responsesRenderer({
      itemId: template.item,
      stored: store,
      snapshot: (model) => responseBody(template, store, model, "in_progress"),
      complete: async (r) => traced(r.response ?? responseBody(template, store, r.model.name, statusOf(r), r), r, trace),
      failed: (model, e) => {
        const error = streamErrorBody(e).error;
        return { response: responseBody(template, store, model, "failed", undefined, error), error };
      },
    }),
};

/** POST/GET/DELETE /v1/responses: OpenAI's stateful API over threads and checkpoints. */
export const responsesRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(create, (c) => serveTurn(c, responsesFormat, { json: c.req.valid("json"), threadHeader: c.req.valid("header")["x-thread-id"] }))
  .openapi(retrieve, async (c) => {
    const rec = await reachableResponse(c, c.req.valid("param").id);
    return c.json(responseFor(c.get("principal"), rec.body) as z.infer<typeof ResponseObject>, 200);
  })
  .openapi(remove, async (c) => {
    // Deletes the response record only (its thread's checkpoints stay), yet what the thread keeps is
    // rewritten (the record can no longer be continued from): rewrite_thread, as deleting a conversation item.
    const rec = await reachableResponse(c, c.req.valid("param").id, true);
    const deleted = rec.thread ? await rec.thread.deleteResponse(rec.id) : await deleteResponse(c.env.DB, responsesTenant(c.get("principal")), rec.id);
    if (!deleted) throw new AppError("BEM-100", `No response '${rec.id.slice(0, 80)}'`);
    return c.json({ id: rec.id, object: "response.deleted" as const, deleted: true as const }, 200);
  })
  .openapi(inputItems, async (c) => {
    const rec = await reachableResponse(c, c.req.valid("param").id);
    return c.json(listPage(rec.input as { id?: unknown }[], c.req.valid("query"), "desc") as never, 200);
  });
