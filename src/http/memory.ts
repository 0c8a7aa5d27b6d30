import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { BOOKMARK_HEADER, factsSession, parseBookmark } from "../memory/bookmark";
import { D1FactsBackend } from "../memory/d1-facts-backend";
import { Fact, publicFact, RememberOptionFields, rememberInput, validateKey, validateKind } from "../memory/facts";
import { memoryFor } from "../memory/for-tenant";
import { embedFactsQuery } from "../memory/fact-vectors";
import { factsEmbedder } from "../embed/embedders";
import { factsQueryHolder } from "../pipeline/spend-guard";
import { FactReport, RankChannels, RecallReport } from "../memory/report";
import { MemoryScope, ScopeInput } from "../memory/scope";
import type { LoadedContext as MemoryContext } from "../memory/types";
import { authorize, decide } from "../auth/policy";
import type { Principal } from "../core/principal";
import { Message } from "../core/message";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { pageOf, pageQuery, pageStart } from "./paging";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { assertFactRoom, factQuotaOf } from "../auth/quotas";

const FactIdParam = z.object({
  id: z
    .string()
    .max(200)
    .openapi({ param: { name: "id", in: "path" } }),
});

// Kind and text stay loose strings here so the handler answers with their own codes (BEM-063, BEM-062, BEM-064).
const RememberBody = z
  .strictObject({
    scope: ScopeInput,
    kind: z.string().openapi({ description: "[a-z][a-z0-9_-]{0,31}", example: "style" }),
    text: z.string().openapi({ description: "1 to 8192 bytes of UTF-8", example: "Use short sentences." }),
    ...RememberOptionFields,
  })
  .openapi("RememberFact");
const Remembered = Fact.omit({ text: true })
  .extend({
    replaced: z.boolean().openapi({ description: "True when the key already named a fact, whose text this replaced" }),
    existing: z.boolean().openapi({
      description: "True when the scope already held this text (no key; case and spacing aside): that fact is returned and nothing new is stored",
    }),
  })
  .openapi("RememberedFact");
const ScoredFact = Fact.extend({
  score: z.number().optional().openapi({
    description: "Relevance to `q` next to the best hit's (words and meaning fused: 1 for the best, lower for weaker hits; comparable within one answer)",
  }),
  channels: RankChannels.optional().openapi({ description: "With `q`: its rank and score in each channel that found it (`full_text`, `dense`)" }),
});
const FactPage = z.object({ facts: z.array(ScoredFact), next_cursor: z.string().nullable() }).openapi("FactPage");
const FactHistory = z
  .object({
    fact: Fact,
    versions: z.array(z.object({ version: z.number().int(), kind: z.string(), text: z.string(), written_at: z.number().int(), replaced_at: z.number().int() })),
  })
  .openapi("FactHistory");
/**
 * The largest budget a context call takes: a million tokens, above every model's window in models.yaml (the largest is
 * 200,000) and the long-context models'. One call answers ~4 bytes a token of it for one rate-limit charge; at the
 * former 10,000,000 that was tens of MB, past what a Worker holds.
 */
export const MAX_CONTEXT_TOKENS = 1_000_000;

// Strict: an unknown field (a thread_id, a misspelt option) would otherwise be accepted and do nothing.
const ContextBody = z
  .strictObject({
    scopes: z
      .array(ScopeInput)
      .min(1)
      .max(32)
      .openapi({ example: ["system", "organization:acme", "session:support-42"] }),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .max(MAX_CONTEXT_TOKENS)
      .openapi({ example: 4096, description: `The budget, as a model's window: at most ${MAX_CONTEXT_TOKENS.toLocaleString("en-US")} tokens` }),
    query: z.string().max(16_384).optional().openapi({
      description:
        "The current input: when a scope's facts do not fit, the most relevant to it load first; when a session's turns do not fit, earlier turns relevant to it are recalled (as in a run)",
    }),
    always_kinds: z.array(z.string().max(32)).max(32).optional().openapi({ description: "Kinds that load before any other fact of their scope" }),
    channels: z
      .array(z.enum(["full_text", "dense"]))
      .min(1)
      .max(2)
      .optional()
      .openapi({
        description:
          "What ranks earlier turns and facts for `query`: words (full_text), meaning (dense), or both fused (the default; docs/concepts/recall-by-meaning.md)",
      }),
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
    facts: z.array(FactReport).openapi({ description: "Each loaded fact and why, and the examined ones that did not fit" }),
    recalled: z.array(RecallReport).openapi({
      description: "Earlier turns of the session recalled for `query` (the system message `recalled` before the recent turns carries them), oldest first",
    }),
    warnings: z
      .array(z.string())
      .optional()
      .openapi({ description: "What the answer ran without, as a run's reply says it: recall by meaning when a remote embedder failed (absent: nothing)" }),
  })
  .openapi("LoadedContext");

/** The documented shape: one list as a model is sent it (facts, then turns), one token total, the fact report as `facts`. */
const contextBody = (ctx: MemoryContext): z.infer<typeof LoadedContext> => ({
  messages: [...ctx.facts, ...ctx.turns],
  tokens: ctx.tokens.facts + ctx.tokens.turns,
  facts: ctx.report,
  recalled: ctx.recalled,
  dropped: ctx.dropped,
  ...(ctx.warnings.length > 0 ? { warnings: ctx.warnings } : {}),
});

/** The session's bookmark as a response header (none before its first query). */
function bookmarkHeader(session: D1DatabaseSession): Record<string, string> {
  const b = session.getBookmark();
  return b ? { [BOOKMARK_HEADER]: b } : {};
}

const rememberFact = createRoute({
  method: "post",
  path: "/v1/memory/facts",
  middleware: access("write_scope", "small", { idempotent: true }),
  tags: ["memory"],
  summary: "Remember a fact in a scope",
  description: "Only the operator writes `system`; tenant admins any scope of their tenant; members the scopes their key grants.",
  request: { body: { content: { "application/json": { schema: RememberBody } }, required: true } },
  responses: {
    200: jsonContent(Remembered, "The same text was already remembered in this scope: that fact (`existing: true`)"),
    201: jsonContent(Remembered, "The stored fact"),
    ...errorResponses("BEM-022", "BEM-023", "BEM-060", "BEM-062", "BEM-063", "BEM-064", "BEM-140", "BEM-141"),
  },
});

const listFacts = createRoute({
  method: "get",
  path: "/v1/memory/facts",
  middleware: access("read_scope"),
  tags: ["memory"],
  summary: "List a scope's live facts in creation order (paged), or search them",
  description:
    "`kind` and `key` filter; `q` searches the facts by words and meaning, fused as the memory tools' `recall` ranks them (best first, with `score` and `channels`; one page, no cursor). Expired facts are never listed.",
  request: {
    query: z.strictObject({
      scope: z.string().openapi({ example: "organization:acme" }),
      kind: z.string().max(32).optional(),
      key: z.string().max(200).optional(),
      q: z.string().max(2000).optional().openapi({ description: "Words to search for; any syntax characters are treated as plain text" }),
      ...pageQuery("Facts", 200, 50),
    }),
  },
  responses: { 200: jsonContent(FactPage, "A page of facts"), ...errorResponses("BEM-023", "BEM-060", "BEM-063", "BEM-140", "BEM-142") },
});

const forgetFact = createRoute({
  method: "delete",
  path: "/v1/memory/facts/{id}",
  middleware: access("write_scope"),
  tags: ["memory"],
  summary: "Forget a fact",
  description:
    "A fact of another tenant, or in a scope the key cannot read, is indistinguishable from a missing one (404); one it reads but may not write (system) is 403.",
  request: {
    params: FactIdParam,
  },
  responses: { 200: jsonContent(z.object({ id: z.string(), deleted: z.literal(true) }), "Forgotten"), ...errorResponses("BEM-022", "BEM-061") },
});

const factHistory = createRoute({
  method: "get",
  path: "/v1/memory/facts/{id}/history",
  middleware: access("read_scope"),
  tags: ["memory"],
  summary: "A fact and its earlier texts (newest first)",
  description:
    "Versions are kept when remembering with the fact's key replaced its text. A fact of another tenant, in a scope the key cannot read, or an expired one, is 404.",
  request: {
    params: FactIdParam,
    query: z.strictObject({}),
  },
  responses: { 200: jsonContent(FactHistory, "The fact and its versions"), ...errorResponses("BEM-061") },
});

const loadContext = createRoute({
  method: "post",
  path: "/v1/memory/context",
  middleware: access("read_scope", "small"),
  tags: ["memory"],
  summary: "Load layered memory as a model would see it",
  description:
    "Facts first (one system message per scope and kind: a header line `[{kind} {scope}]`, then each fact's text as a JSON string on its own line; " +
    "`metadata.fact` names them, `{kind, scope, ids}`; layer order, then creation order) within half the budget; " +
    "a scope whose facts do not fit loads `always_kinds` first, then the facts most relevant to `query`, then the newest. " +
    "Then the session's turns in the rest: all when they fit; else, as in a run, three quarters of it go to earlier turns relevant to `query` (one system message of dated excerpts, before the recent turns) and the newest turns take the remainder. " +
    "`dropped` reports what was left out, `facts` which facts loaded and why, `recalled` which earlier turns came back and why.",
  request: { body: { content: { "application/json": { schema: ContextBody } }, required: true } },
  responses: { 200: jsonContent(LoadedContext, "The loaded context"), ...errorResponses("BEM-023", "BEM-030", "BEM-060") },
});

/**
 * A fact by id, as the caller may know of it: one in a scope it cannot read is 404 as an absent one is (as the
 * memory tools' forget by id answers), so an id tells nothing of scopes outside the grants — the 403 named the
 * fact's scope (`user:bob`, `session:<thread>`) and said the fact was there.
 */
async function readableFact(store: D1FactsBackend, principal: Principal, id: string) {
  const fact = await store.get(id);
  if (!fact || !decide(principal, "read_scope", { scope: MemoryScope.parse(fact.scope) }).allow) throw new AppError("BEM-061", "No such fact");
  return fact;
}

/** Long-term memory: remember, list, forget facts; load a context as a model would see it. */
export const memoryRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(rememberFact, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const now = Date.now();
    const { scope, kind, text, key, expiresAt } = rememberInput(body, now);
    authorize(principal, "write_scope", { scope });
    // Written through a session so the answer carries its bookmark: a run that sends it back sees this fact.
    const session = c.env.DB.withSession("first-primary");
    const facts = new D1FactsBackend(session, principal.tenant);
    await assertFactRoom(c.env, principal.tenant, facts, scope, key);
    const {
      text: _text,
      tokens: _tokens,
      ...fact
    } = await facts.remember(scope, kind, text, {
      key,
      expiresAt,
      now,
      writtenBy: principal.role,
      maxFacts: factQuotaOf(c.env, principal.tenant),
    });
    return c.json(fact, fact.existing ? 200 : 201, bookmarkHeader(session));
  })
  .openapi(listFacts, async (c) => {
    const q = c.req.valid("query");
    const principal = c.get("principal");
    const scope = MemoryScope.parse(q.scope);
    authorize(principal, "read_scope", { scope });
    const filter = { ...(q.kind !== undefined ? { kind: validateKind(q.kind) } : {}), ...(q.key !== undefined ? { key: validateKey(q.key) } : {}) };
    const limit = q.limit ?? 50;
    const session = factsSession(c.env.DB, parseBookmark(c.req.header(BOOKMARK_HEADER)));
    const holder = q.q !== undefined ? factsQueryHolder(c.env, principal, (p) => c.executionCtx.waitUntil(p)) : undefined;
    const store = new D1FactsBackend(session, principal.tenant, Date.now, undefined, holder);
    if (q.q !== undefined) {
      if (q.cursor !== undefined) throw new AppError("BEM-142", "A search (q) is one page, best first; it takes no cursor");
      const hits = await store.searchScopes([scope], q.q, limit, filter);
      return c.json({ facts: hits.map((f) => ({ ...publicFact(f), score: f.score, channels: f.channels })), next_cursor: null }, 200, bookmarkHeader(session));
    }
    const { items: facts, next_cursor } = pageOf("facts", await store.list(scope, limit + 1, pageStart("facts", q.cursor), filter), limit);
    return c.json({ facts: facts.map(publicFact), next_cursor }, 200, bookmarkHeader(session));
  })
  .openapi(forgetFact, async (c) => {
    const { id } = c.req.valid("param");
    const principal = c.get("principal");
    const session = c.env.DB.withSession("first-primary");
    const facts = new D1FactsBackend(session, principal.tenant);
    const fact = await readableFact(facts, principal, id);
    authorize(principal, "write_scope", { scope: MemoryScope.parse(fact.scope) });
    if (!(await facts.forget(id))) throw new AppError("BEM-061", "No such fact");
    return c.json({ id, deleted: true as const }, 200, bookmarkHeader(session));
  })
  .openapi(factHistory, async (c) => {
    const { id } = c.req.valid("param");
    const principal = c.get("principal");
    const store = new D1FactsBackend(c.env.DB, principal.tenant);
    const fact = await readableFact(store, principal, id);
    return c.json({ fact: publicFact(fact), versions: await store.history(id) }, 200);
  })
  .openapi(loadContext, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const scopes = body.scopes.map((s) => MemoryScope.parse(s));
    for (const scope of scopes) authorize(principal, "read_scope", { scope });
    const session = factsSession(c.env.DB, parseBookmark(c.req.header(BOOKMARK_HEADER)));
    if (body.channels && !body.query?.trim())
      throw new AppError("BEM-011", "channels: they rank facts and earlier turns for query; send query with them, or leave channels out");
    const asked = {
      ...(body.query !== undefined ? { query: body.query } : {}),
      ...(body.always_kinds ? { alwaysKinds: body.always_kinds.map(validateKind) } : {}),
      ...(body.channels ? { channels: body.channels } : {}),
    };
    // A remote facts embedder's query vector first (failing: words alone, and the answer says so).
    const holder = factsQueryHolder(c.env, principal, (p) => c.executionCtx.waitUntil(p));
    const { rank, warning } = await embedFactsQuery(session, factsEmbedder(), principal.tenant, asked, holder);
    const ctx = await memoryFor(c.env, principal.tenant, { facts: session }).loadContext(scopes, body.max_tokens, rank);
    if (warning !== undefined && !ctx.warnings.includes(warning)) ctx.warnings.unshift(warning);
    return c.json(contextBody(ctx), 200, bookmarkHeader(session));
  });
