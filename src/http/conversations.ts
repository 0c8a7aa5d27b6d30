import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { authorizeThread } from "../auth/policy";
import { assertThreadRoom } from "../auth/quotas";
import { AppError } from "../core/errors";
import { inputToMessages, messagesToItems } from "../responses/convert";
import { resolveReferences } from "../responses/references";
import { newThreadId } from "../responses/plan";
import { deleteConversationRecords, requireConversation, saveConversation, type ConversationRecord } from "../responses/store";
import { ThreadClient } from "../thread/client";
import { parseThreadId } from "../thread/thread-id";
import type { Message } from "../core/message";
import { access, type Access, type BodySize } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { type Principal, tenantOf } from "../core/principal";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { listPage } from "./paging";
import { chargeOps } from "../auth/rate-limit";
import { IdParam, InputItem, ListQuery, Metadata } from "../edge/responses-schemas";
import { validationHook } from "../edge/validation";

/**
 * OpenAI Conversations over threads: a conversation id IS a thread id (any thread
 * the tenant wrote is a conversation; one created here also has metadata). Items are
 * the thread's messages at its head, with ids `msg_<message id>` (a tool call of an
 * assistant message: `msg_<message id>_fc<n>`).
 */
const Conversation = z
  .object({ id: z.string(), object: z.literal("conversation"), created_at: z.number(), metadata: z.record(z.string(), z.string()) })
  .openapi("Conversation");
const ItemList = z
  .object({
    object: z.literal("list"),
    data: z.array(z.record(z.string(), z.unknown())),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .openapi("ConversationItemList");
const Items = z.array(InputItem).max(1000);
const ItemParam = IdParam.extend({ item_id: z.string().min(1).max(300) });
const ERRORS = ["BEM-017", "BEM-022", "BEM-025", "BEM-030", "BEM-038", "BEM-102", "BEM-111"] as const;

/**
 * A conversation is a thread, so its routes need the thread's rights: reading it, adding to it
 * and its metadata need `reach_thread` (the conversation's id matches a grant `session:<id>`);
 * deleting it or one of its items removes stored history, so also `rewrite_thread`.
 */
const route = <M extends "get" | "post" | "delete", P extends string>(method: M, path: P, summary: string, need: Access, body: BodySize = "none") => ({
  method,
  path,
  middleware: access(need, body, method === "post" ? { idempotent: true } : {}),
  tags: ["conversations"],
  summary,
});

const create = createRoute({
  ...route("post", "/v1/conversations", "Create a conversation (a new thread), optionally with items and metadata", "reach_thread", "conversation"),
  request: {
    body: {
      content: { "application/json": { schema: z.strictObject({ items: Items.nullable().optional(), metadata: Metadata.nullable().optional() }) } },
      required: true,
    },
  },
  responses: { 200: jsonContent(Conversation, "The conversation"), ...errorResponses(...ERRORS) },
});
const retrieve = createRoute({
  ...route("get", "/v1/conversations/{id}", "A conversation (any thread of the tenant)", "reach_thread"),
  request: { params: IdParam },
  responses: { 200: jsonContent(Conversation, "The conversation"), ...errorResponses(...ERRORS) },
});
const update = createRoute({
  ...route("post", "/v1/conversations/{id}", "Replace a conversation's metadata", "reach_thread", "small"),
  request: { params: IdParam, body: { content: { "application/json": { schema: z.object({ metadata: Metadata.nullable() }) } }, required: true } },
  responses: { 200: jsonContent(Conversation, "The conversation"), ...errorResponses(...ERRORS) },
});
const remove = createRoute({
  ...route("delete", "/v1/conversations/{id}", "Delete a conversation: its thread and the responses stored on it", "rewrite_thread"),
  request: { params: IdParam },
  responses: {
    200: jsonContent(z.object({ id: z.string(), object: z.literal("conversation.deleted"), deleted: z.literal(true) }), "Deleted"),
    ...errorResponses(...ERRORS, "BEM-171"),
  },
});
const listItems = createRoute({
  ...route("get", "/v1/conversations/{id}/items", "The conversation's items (the thread's messages at its head)", "reach_thread"),
  request: {
    params: IdParam,
    query: ListQuery,
  },
  responses: { 200: jsonContent(ItemList, "Items"), ...errorResponses(...ERRORS) },
});
const addItems = createRoute({
  ...route("post", "/v1/conversations/{id}/items", "Append items (one checkpoint)", "reach_thread", "conversation"),
  request: { params: IdParam, body: { content: { "application/json": { schema: z.object({ items: Items.min(1) }) } }, required: true } },
  responses: { 200: jsonContent(ItemList, "The added items"), ...errorResponses(...ERRORS) },
});
const getItem = createRoute({
  ...route("get", "/v1/conversations/{id}/items/{item_id}", "One item", "reach_thread"),
  request: { params: ItemParam },
  responses: { 200: jsonContent(z.record(z.string(), z.unknown()), "The item"), ...errorResponses(...ERRORS, "BEM-104") },
});
const deleteItem = createRoute({
  ...route("delete", "/v1/conversations/{id}/items/{item_id}", "Remove an item's message from the thread (one checkpoint)", "rewrite_thread"),
  request: { params: ItemParam },
  responses: { 200: jsonContent(Conversation, "The conversation"), ...errorResponses(...ERRORS, "BEM-104") },
});

/**
 * Items as the thread messages they store. A system or developer item is refused (400 BEM-111):
 * stored, it would reach every later turn on the thread, by any key, as an instruction, while
 * instructions are per call, as on chat (`instructions`, or system input of one Responses call).
 */
async function storedMessages(env: Env, principal: AppEnv["Variables"]["principal"], items: z.infer<typeof Items>) {
  const messages = inputToMessages(await resolveReferences(env, principal, items));
  if (messages.some((m) => m.role === "system"))
    throw new AppError(
      "BEM-111",
      "Conversation items are stored history; send system or developer messages per call (a Responses call's instructions or input)",
    );
  // Only reasoning items: nothing to store. Adding them answered BEM-035 about a state op the caller never sent,
  // and creating a conversation with them stored none without a word.
  if (messages.length === 0)
    throw new AppError(
      "BEM-011",
      "items: none of them stores a message here (reasoning items are not kept); send a message, function_call or function_call_output",
    );
  return messages;
}

/** Conversations and Responses belong to tenants: the caller's, or 403 BEM-022. */
const conversationsTenant = (principal: Principal): string => tenantOf(principal, "Conversations belong to tenants; use a tenant key");

const view = (c: ConversationRecord) => ({ id: c.id, object: "conversation" as const, created_at: Math.floor(c.created_at / 1000), metadata: c.metadata });
const itemsOf = (messages: readonly Message[]) => messagesToItems(messages, "msg");

/** The thread message an item id names (`msg_<id>` or `msg_<id>_fc<n>`). */
function messageIdOf(itemId: string, messages: readonly Message[]): string {
  const m = messages.find((x) => itemsOf([x]).some((i) => i.id === itemId));
  if (!m) throw new AppError("BEM-104", `No item '${itemId.slice(0, 80)}' in this conversation`);
  return m.id;
}

/**
 * The conversation, after the key's grants allow it (403 BEM-025 whether or not it exists;
 * `rewrites`: removing stored history also needs rewrite_thread, 403 BEM-022), then its tenant's record.
 */
async function open(c: { env: Env; get(k: "principal"): AppEnv["Variables"]["principal"] }, id: string, rewrites: boolean) {
  const principal = c.get("principal");
  const tenant = conversationsTenant(principal);
  authorizeThread(principal, parseThreadId(id), rewrites);
  const record = await requireConversation(c.env.DB, tenant, id);
  return { tenant, record, thread: new ThreadClient(c.env, tenant, id) };
}

export const conversationRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(create, async (c) => {
    const principal = c.get("principal");
    const tenant = conversationsTenant(principal);
    // A JSON body is required ({} at least, as the openai client sends): an empty POST creates nothing.
    if ((await c.req.text()).trim() === "") throw new AppError("BEM-011", "Send a JSON body ({} at least)");
    const body = c.req.valid("json");
    const record: ConversationRecord = { id: newThreadId().replace(/^thr_/, "conv_"), metadata: body.metadata ?? {}, created_at: Date.now() };
    // A new thread, as chat on a new thread_id: the key must reach it (a grant matching session:conv_*).
    authorizeThread(principal, record.id, false);
    await chargeOps(c.env, principal, body.items?.length ?? 0);
    const messages = body.items?.length ? await storedMessages(c.env, principal, body.items) : [];
    // A conversation is a new thread, empty or not: within the tenant's thread quota (413 BEM-017,
    // nothing stored), and listed (and so counted) with its record.
    await assertThreadRoom(c.env, tenant, record.id);
    if (messages.length > 0) await new ThreadClient(c.env, tenant, record.id).appendMessages(messages, "update");
    await saveConversation(c.env.DB, tenant, record, { listed: true });
    return c.json(view(record), 200);
  })
  .openapi(retrieve, async (c) => {
    const { record } = await open(c, c.req.valid("param").id, false);
    return c.json(view(record), 200);
  })
  .openapi(update, async (c) => {
    const { tenant, record } = await open(c, c.req.valid("param").id, false);
    const next = { ...record, metadata: c.req.valid("json").metadata ?? {} };
    await saveConversation(c.env.DB, tenant, next);
    return c.json(view(next), 200);
  })
  .openapi(remove, async (c) => {
    const { tenant, record, thread } = await open(c, c.req.valid("param").id, true);
    await thread.destroy();
    await deleteConversationRecords(c.env.DB, tenant, record.id);
    return c.json({ id: record.id, object: "conversation.deleted" as const, deleted: true as const }, 200);
  })
  .openapi(listItems, async (c) => {
    const { thread } = await open(c, c.req.valid("param").id, false);
    const state = await thread.getState();
    return c.json(listPage(itemsOf(state.channels.messages), c.req.valid("query"), "desc") as z.infer<typeof ItemList>, 200);
  })
  .openapi(addItems, async (c) => {
    const { tenant, thread } = await open(c, c.req.valid("param").id, false);
    await chargeOps(c.env, c.get("principal"), c.req.valid("json").items.length);
    // A conversation created without items has no thread yet: the first items make one.
    await assertThreadRoom(c.env, tenant, thread.threadId);
    const cp = await thread.appendMessages(await storedMessages(c.env, c.get("principal"), c.req.valid("json").items), "update");
    const added = cp.writes.flatMap((w) => (w.op === "put" ? [w.message] : []));
    return c.json(listPage(itemsOf(added), { limit: 1000 }, "asc") as z.infer<typeof ItemList>, 200);
  })
  .openapi(getItem, async (c) => {
    const { id, item_id } = c.req.valid("param");
    const { thread } = await open(c, id, false);
    const items = itemsOf((await thread.getState()).channels.messages);
    const item = items.find((i) => i.id === item_id);
    if (!item) throw new AppError("BEM-104", `No item '${item_id.slice(0, 80)}' in this conversation`);
    return c.json(item, 200);
  })
  .openapi(deleteItem, async (c) => {
    const { id, item_id } = c.req.valid("param");
    const { record, thread } = await open(c, id, true);
    const messageId = messageIdOf(item_id, (await thread.getState()).channels.messages);
    await thread.removeForGood(messageId);
    return c.json(view(record), 200);
  });
