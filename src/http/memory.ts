import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../errors";
import { D1FactsBackend } from "../memory/d1-facts-backend";
import { Fact, validateFactText, validateKind } from "../memory/facts";
import { memoryFor } from "../memory/for-tenant";
import { MemoryScope, ScopeInput } from "../memory/scope";
import { assertCanRead, assertCanWriteFact } from "../memory/scopes-for";
import { Message } from "../thread/message";
import type { AppEnv } from "./app-env";
import { cursorOf, parseCursor } from "./cursor";
import { errorResponses, jsonContent } from "./openapi-errors";
import { validationHook } from "./validation";
import { assertRoom } from "../quotas";

// Kind and text stay loose strings here so the handler answers with their own codes (BEM-063, BEM-062, BEM-064).
const RememberBody = z
  .strictObject({
    scope: ScopeInput,
    kind: z.string().openapi({ description: "[a-z][a-z0-9_-]{0,31}", example: "style" }),
    text: z.string().openapi({ description: "1 to 8192 bytes of UTF-8", example: "Use short sentences." }),
  })
  .openapi("RememberFact");
const Remembered = Fact.omit({ text: true }).openapi("RememberedFact");
const FactPage = z.object({ facts: z.array(Fact), next_cursor: z.string().nullable() }).openapi("FactPage");
const ContextBody = z
  .object({
    scopes: z.array(ScopeInput).min(1).max(32).openapi({ example: ["system", "organization:acme", "session:support-42"] }),
    max_tokens: z.number().int().min(1).max(10_000_000).openapi({ example: 4096 }),
  })
  .openapi("LoadContext");
const LoadedContext = z
  .object({
    messages: z.array(Message),
    tokens: z.number().int(),
    dropped: z.object({
      facts: z.number().int().openapi({ description: "Facts left out because they exceeded the facts share (half the budget)" }),
      turns: z.boolean().openapi({ description: "Older turns were left out" }),
    }),
  })
  .openapi("LoadedContext");

const publicFact = (f: Fact): Fact => ({ id: f.id, scope: f.scope, kind: f.kind, text: f.text, created_at: f.created_at, tokens: f.tokens });

const rememberFact = createRoute({
  method: "post",
  path: "/v1/memory/facts",
  tags: ["memory"],
  summary: "Remember a fact in a scope",
  description: "Only the operator writes `system`; tenant admins any scope of their tenant; members the scopes their key grants.",
  request: { body: { content: { "application/json": { schema: RememberBody } }, required: true } },
  responses: { 201: jsonContent(Remembered, "The stored fact"), ...errorResponses("BEM-022", "BEM-023", "BEM-060", "BEM-062", "BEM-063", "BEM-064") },
});

const listFacts = createRoute({
  method: "get",
  path: "/v1/memory/facts",
  tags: ["memory"],
  summary: "List a scope's facts in creation order (paged)",
  request: {
    query: z.object({
      scope: z.string().openapi({ example: "organization:acme" }),
      limit: z.coerce.number().int().min(1).max(200).optional(),
      cursor: z.string().max(200).optional(),
    }),
  },
  responses: { 200: jsonContent(FactPage, "A page of facts"), ...errorResponses("BEM-023", "BEM-060") },
});

const forgetFact = createRoute({
  method: "delete",
  path: "/v1/memory/facts/{id}",
  tags: ["memory"],
  summary: "Forget a fact",
  description: "A fact of another tenant is indistinguishable from a missing one (404).",
  request: { params: z.object({ id: z.string().max(200).openapi({ param: { name: "id", in: "path" } }) }) },
  responses: { 200: jsonContent(z.object({ id: z.string(), deleted: z.literal(true) }), "Forgotten"), ...errorResponses("BEM-022", "BEM-023", "BEM-061") },
});

const loadContext = createRoute({
  method: "post",
  path: "/v1/memory/context",
  tags: ["memory"],
  summary: "Load layered memory as a model would see it",
  description:
    "Facts first (one system message each, `[{kind} {scope}] \"{text}\"` with the text a one-line JSON string; layer order, then creation order) within half the budget; " +
    "then the newest turns that fit the rest. `dropped` reports what was left out.",
  request: { body: { content: { "application/json": { schema: ContextBody } }, required: true } },
  responses: { 200: jsonContent(LoadedContext, "The loaded context"), ...errorResponses("BEM-023", "BEM-030", "BEM-060") },
});

/** Long-term memory: remember, list, forget facts; load a context as a model would see it. */
export const memoryRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(rememberFact, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const scope = MemoryScope.parse(body.scope);
    const kind = validateKind(body.kind);
    const text = validateFactText(body.text);
    assertCanWriteFact(principal, scope);
    await assertRoom(c.env, principal.tenant, "facts");
    const fact = await new D1FactsBackend(c.env.DB, principal.tenant).remember(scope, kind, text);
    return c.json({ id: fact.id, scope: fact.scope, kind: fact.kind, created_at: fact.created_at }, 201);
  })
  .openapi(listFacts, async (c) => {
    const q = c.req.valid("query");
    const principal = c.get("principal");
    const scope = MemoryScope.parse(q.scope);
    assertCanRead(principal, scope);
    const limit = q.limit ?? 50;
    const rows = await new D1FactsBackend(c.env.DB, principal.tenant).list(scope, limit + 1, q.cursor ? parseCursor(q.cursor) : undefined);
    const facts = rows.slice(0, limit);
    const last = facts[facts.length - 1];
    return c.json({ facts: facts.map(publicFact), next_cursor: rows.length > limit && last ? cursorOf(last) : null }, 200);
  })
  .openapi(forgetFact, async (c) => {
    const { id } = c.req.valid("param");
    const principal = c.get("principal");
    const facts = new D1FactsBackend(c.env.DB, principal.tenant);
    const fact = await facts.get(id);
    if (!fact) throw new AppError("BEM-061", "No such fact");
    assertCanWriteFact(principal, MemoryScope.parse(fact.scope));
    if (!(await facts.forget(id))) throw new AppError("BEM-061", "No such fact");
    return c.json({ id, deleted: true as const }, 200);
  })
  .openapi(loadContext, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const scopes = body.scopes.map((s) => MemoryScope.parse(s));
    for (const s of scopes) assertCanRead(principal, s);
    return c.json(await memoryFor(c.env, principal.tenant).loadContext(scopes, body.max_tokens), 200);
  });
