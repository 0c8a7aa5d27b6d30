import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { parseGrant, grantWithin } from "../auth/grants";
import { authorize, authorizeThread, readableThreads, resolveScopes } from "../auth/policy";
import type { Principal } from "../core/principal";
import { middlewaresFromConfig } from "../pipeline/middleware/from-config";
import { AppError } from "../core/errors";
import { requireAgent } from "../routing/bundled";
import { enqueueTask } from "../queue/messages";
import { parseThreadId } from "../thread/thread-id";
import { allowPrivateCallbacks, assertCallbackUrl, MAX_CALLBACK_URL } from "../webhooks/callback-url";
import { parsePointer, resolvePointer } from "../webhooks/pointer";
import { webhookPrincipal } from "../tasks/run-webhook";
import { toHex } from "../core/encoding";
import {
  DELIVERY_HEADER,
  newSecret,
  parseSignature,
  parseTimestamp,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  verify,
  withinReplayWindow,
} from "../webhooks/signature";
import {
  claimDelivery,
  claimSignature,
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listWebhooks,
  releaseDelivery,
  releaseSignature,
  Webhook,
} from "../webhooks/store";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { pageOf, pageQuery, pageStart } from "./paging";
import { decodeUtf8, parseGuardedJson } from "../edge/limits";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { limited, withinLimit } from "../auth/rate-limit";
import { validationHook } from "../edge/validation";
import { assertRoom } from "../auth/quotas";

/**
 * Signed inbound webhooks. A tenant admin registers a hook (agent + where the
 * thread id and the text sit in the payload); the sender POSTs payloads signed
 * with the hook's secret; each accepted delivery becomes one agent turn on the
 * TASKS queue, answered 202 at once.
 *
 * Delivery checks, in order (each rejection stores nothing):
 *   body over 256 KiB → 413 BEM-013 (the limits middleware, before reading)
 *   unknown hook → 404 BEM-093 (hook ids are 128-bit random, so a 404 reveals
 *     nothing an attacker could enumerate; it also helps a sender with a wrong URL)
 *   missing / malformed signature headers, bad HMAC → 401 BEM-090
 *   timestamp more than 5 minutes from now, either way → 401 BEM-091
 *   over the hook's rate → 429 BEM-024 (only after the signature holds)
 *   not JSON → 400 BEM-010 / BEM-014; pointers missing → 422 BEM-095
 */

const POINTER_MAX = 256;
const Pointer = z.string().max(POINTER_MAX).openapi({ description: "RFC 6901 JSON pointer into the payload", example: "/ticket/id" });

const CreateWebhook = z
  .strictObject({
    name: z.string().min(1).max(100).openapi({ example: "helpdesk" }),
    agent_name: z.string().min(1).max(64).openapi({ example: "assistant" }),
    thread_from: Pointer,
    text_from: Pointer.openapi({ example: "/ticket/body" }),
    callback_url: z.string().max(MAX_CALLBACK_URL).optional().openapi({
      description:
        'https URL that receives {webhook_id, delivery_id, thread_id, reply, model}, signed with the hook\'s secret as `X-Edgeweave-Signature: v2=<hex HMAC-SHA256 of "callback.<timestamp>.<raw body>">`',
      example: "https://example.com/hooks/edgeweave",
    }),
    scopes: z
      .array(z.string().max(200))
      .max(64)
      .optional()
      .openapi({
        description:
          "Grant patterns deliveries run with, as for member keys: a delivery reaches thread t only through a grant matching session:t, so at least one session: grant (or *) is required (422 BEM-161 otherwise), and the agent's memory_scopes must all be granted.",
        example: ["session:ticket-*", "organization:acme"],
      }),
    rewrite_history: z
      .boolean()
      .optional()
      .openapi({ description: "Allow agents whose middleware rewrites stored history (trim, delete_old, summarization). Default false." }),
    write_facts: z.boolean().optional().openapi({
      description:
        "Let deliveries write facts within the hook's grants: the remember / forget tools and extraction after its turns. Default false (a delivery's text comes from outside the tenant).",
    }),
  })
  .openapi("CreateWebhook");
const CreatedWebhook = Webhook.extend({
  secret: z.string().openapi({ description: "The HMAC key: shown once. Sign `<timestamp>.<raw body>` with HMAC-SHA256." }),
}).openapi("CreatedWebhook");
const Accepted = z.object({ delivery_id: z.string(), status: z.literal("accepted") }).openapi("WebhookAccepted");
const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "wh_3f2a…" }),
});

/**
 * The grants a new hook may carry: parsed like a key's, each within the registering
 * key's own grants, and enough for its agent (every memory scope granted, the rewrite
 * right if its middleware rewrites history) — so deliveries fail here, not on the queue.
 */
function hookGrants(
  p: Principal,
  body: { agent_name: string; scopes?: string[]; rewrite_history?: boolean; write_facts?: boolean },
): { scopes: string[]; rewrite_history: boolean; write_facts: boolean } {
  const scopes = [...new Set((body.scopes ?? []).map(parseGrant))];
  for (const g of scopes) if (!grantWithin(p.grants, g)) throw new AppError("BEM-023", `Grant '${g}' is more than this key holds`);
  const rewrite_history = body.rewrite_history === true;
  if (rewrite_history) authorize(p, "rewrite_thread");
  const write_facts = body.write_facts === true;
  if (write_facts) authorize(p, "write_scope");
  const hook: Principal = {
    kind: "webhook",
    tenant: p.tenant,
    role: "webhook",
    keyId: "webhook:new",
    grants: scopes,
    rewriteHistory: rewrite_history,
    writeFacts: write_facts,
  };
  // Every delivery names a thread, and reaches it only through a session: grant: without one each
  // would be 403 BEM-025, seen only by the sender, so the hook is refused here instead.
  const reach = readableThreads(hook);
  if (!reach.all && reach.exact.length === 0 && reach.prefixes.length === 0) {
    throw new AppError(
      "BEM-161",
      "scopes grant no thread, so every delivery would be refused: add a session: grant matching the thread ids your payloads name (e.g. session:ticket-*, or session:* for any)",
    );
  }
  const agent = requireAgent(body.agent_name);
  // One layer at a time, so the refusal names the layer and blames the hook's scopes:
  // the registering key may well hold it, and "outside this key's grants" would mislead.
  for (const layer of agent.memory_scopes) {
    try {
      resolveScopes({ principal: hook, agentScopes: [layer] });
    } catch (e) {
      if (!(e instanceof AppError) || e.code !== "BEM-023") throw e;
      throw new AppError("BEM-023", `The agent '${agent.name}' loads '${layer}', which the webhook's scopes do not cover: add it to scopes`);
    }
  }
  if (middlewaresFromConfig(agent.middleware ?? []).some((m) => m.rewritesHistory === true)) authorize(hook, "rewrite_thread");
  return { scopes, rewrite_history, write_facts };
}

function pointerOrFail(field: string, raw: string): void {
  if (parsePointer(raw) === null) throw new AppError("BEM-011", `${field}: not a JSON pointer (RFC 6901), e.g. "/ticket/id"`);
}

const createWebhook = createRoute({
  method: "post",
  path: "/v1/webhooks",
  middleware: access("manage_webhooks", "small", { idempotent: true }),
  tags: ["webhooks"],
  summary: "Register a signed inbound webhook",
  request: { body: { content: { "application/json": { schema: CreateWebhook } }, required: true } },
  responses: {
    201: jsonContent(CreatedWebhook, "The hook and its secret (shown once)"),
    ...errorResponses("BEM-022", "BEM-023", "BEM-047", "BEM-060", "BEM-094", "BEM-161"),
  },
});

const listWebhooksRoute = createRoute({
  method: "get",
  path: "/v1/webhooks",
  middleware: access("manage_webhooks"),
  tags: ["webhooks"],
  summary: "List the tenant's webhooks in creation order, paged (secrets are never shown again)",
  request: {
    query: z.strictObject(pageQuery("Hooks", 200, 50)),
  },
  responses: {
    200: jsonContent(
      z.object({ webhooks: z.array(Webhook), next_cursor: z.string().nullable() }).openapi("WebhookList"),
      "A page of hooks; next_cursor is null on the last",
    ),
    ...errorResponses("BEM-011", "BEM-022"),
  },
});

const deleteWebhookRoute = createRoute({
  method: "delete",
  path: "/v1/webhooks/{id}",
  middleware: access("manage_webhooks"),
  tags: ["webhooks"],
  summary: "Delete a webhook (deliveries to it fail from now on)",
  request: { params: IdParam },
  responses: { 200: jsonContent(z.object({ id: z.string(), deleted: z.literal(true) }), "Deleted"), ...errorResponses("BEM-022", "BEM-093") },
});

const DELIVERY_ID = /^[\x21-\x7e]{1,128}$/;

/** The payload's thread id and text, or BEM-095 naming what is missing. */
function extract(payload: unknown, hook: { thread_from: string; text_from: string }): { threadId: string; text: string } {
  const rawThread = resolvePointer(payload, parsePointer(hook.thread_from) ?? []);
  const thread = typeof rawThread === "number" && Number.isFinite(rawThread) ? String(rawThread) : rawThread;
  let threadId: string;
  try {
    threadId = parseThreadId(thread);
  } catch {
    throw new AppError("BEM-095", `The payload has no thread id at ${hook.thread_from} (a string or number of 1-128 characters A-Z a-z 0-9 . _ : -)`);
  }
  const text = resolvePointer(payload, parsePointer(hook.text_from) ?? []);
  if (typeof text !== "string" || text.trim() === "") throw new AppError("BEM-095", `The payload has no non-empty text at ${hook.text_from}`);
  return { threadId, text };
}

const deliverWebhook = createRoute({
  method: "post",
  path: "/v1/webhooks/{id}",
  middleware: access("signed", "webhook"),
  tags: ["webhooks"],
  summary: "Deliver a signed payload (no bearer key: the signature is the credential)",
  security: [],
  description:
    'Headers: `X-Edgeweave-Timestamp` (unix seconds, within 5 minutes of now) and `X-Edgeweave-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`. ' +
    "`X-Edgeweave-Delivery` (1-128 visible ASCII characters; default: hex SHA-256 of the body) makes delivery idempotent: a repeat answers the same 202 and changes nothing. " +
    "The body is JSON of at most 256 KiB. The turn runs on a queue; its reply is stored in the thread and POSTed to the hook's callback_url, if any.",
  request: {
    params: IdParam,
    headers: z.object({
      "x-edgeweave-timestamp": z.string().optional(),
      "x-edgeweave-signature": z.string().optional(),
      "x-edgeweave-delivery": z.string().optional(),
    }),
  },
  responses: {
    202: jsonContent(Accepted, "Accepted (or already accepted: the same answer)"),
    ...errorResponses("BEM-010", "BEM-013", "BEM-014", "BEM-025", "BEM-090", "BEM-091", "BEM-093", "BEM-095"),
  },
});

/** Webhook registration and signed delivery, as one chain (see the top of this file). */
export const webhookRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createWebhook, async (c) => {
    const body = c.req.valid("json");
    pointerOrFail("thread_from", body.thread_from);
    pointerOrFail("text_from", body.text_from);
    const grants = hookGrants(c.get("principal"), body);
    const callback = body.callback_url === undefined ? null : assertCallbackUrl(body.callback_url, allowPrivateCallbacks(c.env)).toString();
    await assertRoom(c.env, c.get("principal").tenant, "webhooks");
    const secret = newSecret();
    const hook = await insertWebhook(c.env.DB, c.get("principal").tenant, {
      name: body.name,
      agent_name: body.agent_name,
      thread_from: body.thread_from,
      text_from: body.text_from,
      callback_url: callback,
      secret,
      ...grants,
    });
    return c.json({ ...hook, secret }, 201);
  })
  .openapi(listWebhooksRoute, async (c) => {
    const q = c.req.valid("query");
    const limit = q.limit ?? 50;
    const { items: webhooks, next_cursor } = pageOf(
      "webhooks",
      await listWebhooks(c.env.DB, c.get("principal").tenant, limit + 1, pageStart("webhooks", q.cursor)),
      limit,
    );
    return c.json({ webhooks, next_cursor }, 200);
  })
  .openapi(deleteWebhookRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!(await deleteWebhook(c.env.DB, c.get("principal").tenant, id))) throw new AppError("BEM-093", "No such webhook");
    return c.json({ id, deleted: true as const }, 200);
  })
  .openapi(deliverWebhook, async (c) => {
    const { id } = c.req.valid("param");
    const hook = await findWebhook(c.env.DB, id);
    if (!hook) throw new AppError("BEM-093", "No such webhook");

    const timestampRaw = c.req.header(TIMESTAMP_HEADER);
    const timestamp = parseTimestamp(timestampRaw);
    const signature = c.req.header(SIGNATURE_HEADER);
    if (timestamp === null || timestampRaw === undefined || signature === undefined) {
      throw new AppError("BEM-090", "Send X-Edgeweave-Timestamp (unix seconds) and X-Edgeweave-Signature (sha256=<hex>)");
    }
    if (!withinReplayWindow(timestamp)) throw new AppError("BEM-091", "X-Edgeweave-Timestamp is more than 5 minutes from now");
    const mac = parseSignature(signature);
    if (!mac) {
      // A callback's own signature (v2) posted back is refused here: it signs another string anyway.
      const hint = signature.startsWith("v2=") ? " (v2= signs edgeweave's callbacks, never a delivery)" : "";
      throw new AppError("BEM-090", `X-Edgeweave-Signature must be exactly sha256=<64 hex digits>${hint}`);
    }
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (!(await verify(hook.secret, timestampRaw, bytes, mac))) throw new AppError("BEM-090", "The signature does not match");
    // The replay record is keyed on the MAC itself, so no spelling of the header can pass as a new request.
    const replayKey = toHex(mac);
    if (!(await withinLimit(c.env.RATE_LIMIT_WEBHOOK, `hook:${hook.id}`))) throw limited("webhook");

    const { threadId, text } = extract(parseGuardedJson(decodeUtf8(bytes)), hook);
    // The hook reaches only the threads its registration granted (BEM-025, nothing stored).
    authorizeThread(webhookPrincipal(hook), threadId, false);
    const header = c.req.header(DELIVERY_HEADER);
    if (header !== undefined && !DELIVERY_ID.test(header)) throw new AppError("BEM-011", "X-Edgeweave-Delivery must be 1-128 visible ASCII characters");
    const deliveryId = header ?? toHex(await crypto.subtle.digest("SHA-256", bytes));

    const sig = await claimSignature(c.env.DB, hook.id, replayKey, deliveryId);
    if (!sig.first) return c.json({ delivery_id: sig.deliveryId, status: "accepted" as const }, 202, { "x-edgeweave-duplicate": "1" });
    const first = await claimDelivery(c.env.DB, { webhookId: hook.id, deliveryId, tenant: hook.tenant_id, threadId, input: text });
    if (first) {
      try {
        await enqueueTask(c.env, {
          id: `run:${hook.id}:${deliveryId}`,
          kind: "run_webhook",
          tenant: hook.tenant_id,
          webhook_id: hook.id,
          delivery_id: deliveryId,
        });
      } catch (e) {
        // Without its task the claim would swallow the sender's retry: undo it.
        await releaseDelivery(c.env.DB, hook.tenant_id, hook.id, deliveryId);
        await releaseSignature(c.env.DB, hook.id, replayKey);
        throw e;
      }
    }
    return c.json({ delivery_id: deliveryId, status: "accepted" as const }, 202, first ? {} : { "x-edgeweave-duplicate": "1" });
  });
