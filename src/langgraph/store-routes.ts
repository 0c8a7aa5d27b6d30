import { access } from "../edge/access";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { chargeOps } from "../auth/rate-limit";
import { validationHook } from "../edge/validation";
import { Namespace, ScopedStore, type SearchItem, type StoreItem, type StoreOp } from "./store";
import { MAX_TEXTS } from "./store-index";
import { quotaOf } from "../auth/quotas";

/**
 * Bodies and GET's query are strict: a field a route does not take is 400 BEM-011 naming it, never ignored (a
 * camelCase `namespacePrefix` would otherwise search the whole tenant).
 *
 * The LangGraph server's store API under /v1/langgraph, so
 * `new Client({ apiUrl: "<origin>/v1/langgraph", defaultHeaders: { authorization: "Bearer <key>" } }).store`
 * (@langchain/langgraph-sdk) works unchanged; plus /store/batch, which EdgeweaveStore uses.
 */
const Value = z.record(z.string(), z.unknown());
const Key = z.string();
const Filter = z.record(z.string(), z.unknown()).optional();
const ItemWire = z
  .object({ namespace: z.array(z.string()), key: z.string(), value: Value, created_at: z.string(), updated_at: z.string() })
  .openapi("StoreItem");
/** A search's item: with a `query`, its `score` (higher is closer; null when nothing of it is indexed), as LangGraph's SearchItem. */
const SearchItemWire = ItemWire.extend({ score: z.number().nullable().optional() }).openapi("StoreSearchItem");
/** The longest `ttl`: 1,000 years in minutes (past some 1e15, now + ttl is no longer an exact integer of ms; 1e300 overflowed). */
const MAX_TTL_MINUTES = 525_600_000;
/**
 * `ttl` in minutes (null: never expires), and `index`, as LangGraph's store API: the fields whose texts a search's
 * `query` ranks by (LangGraph's path syntax), `false` for none, null or absent for the whole value (store-index.ts).
 */
const IndexField = z
  .union([z.literal(false), z.array(z.string().min(1).max(256)).max(MAX_TEXTS)])
  .nullable()
  .optional()
  .openapi({
    description: "Fields to index for `query` (LangGraph's path syntax, e.g. `text`, `notes[*].body`); false: none; null or absent: the whole value",
  });
const Ttl = { index: IndexField, ttl: z.number().positive().max(MAX_TTL_MINUTES).nullable().optional() };

const PutBody = z.strictObject({ namespace: Namespace, key: Key, value: Value.nullable(), ...Ttl });
const SearchBody = z.strictObject({
  namespace_prefix: z.array(z.string()).max(16).default([]),
  filter: Filter,
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  query: z.string().nullable().optional().openapi({ description: "Rank by this text: full-text and meaning, fused (docs/concepts/recall-by-meaning.md)" }),
  refresh_ttl: z.boolean().nullable().optional(),
});
const NamespacesBody = z.strictObject({
  prefix: z.array(z.string()).max(16).nullable().optional(),
  suffix: z.array(z.string()).max(16).nullable().optional(),
  max_depth: z.number().int().min(1).nullable().optional(),
  limit: z.number().int().min(1).max(1000).default(100),
  offset: z.number().int().min(0).default(0),
});
const BatchOp = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("get"), namespace: Namespace, key: Key, refresh_ttl: z.boolean().nullable().optional() }),
  z.strictObject({ op: z.literal("put"), namespace: Namespace, key: Key, value: Value.nullable(), ...Ttl }),
  z.strictObject({ op: z.literal("search"), ...SearchBody.shape }),
  z.strictObject({ op: z.literal("list_namespaces"), ...NamespacesBody.shape }),
]);
const BatchBody = z.strictObject({ ops: z.array(BatchOp).min(1).max(100) });
const BatchResult = z.union([ItemWire.nullable(), z.object({ items: z.array(SearchItemWire) }), z.object({ namespaces: z.array(z.array(z.string())) })]);

const errs = () => errorResponses("BEM-022", "BEM-023", "BEM-060", "BEM-120", "BEM-121", "BEM-133", "BEM-146", "BEM-190");
const json = <T extends z.ZodType>(schema: T) => ({ body: { required: true, content: { "application/json": { schema } } } });

const putItem = createRoute({
  method: "put",
  path: "/v1/langgraph/store/items",
  middleware: access("reach_namespace", "conversation", { rate: "langgraph" }),
  tags: ["langgraph store"],
  summary: "Put (upsert) an item; a null value deletes it",
  request: json(PutBody),
  responses: { 204: { description: "Stored" }, ...errs() },
});
const getItem = createRoute({
  method: "get",
  path: "/v1/langgraph/store/items",
  middleware: access("reach_namespace", "none", { rate: "langgraph" }),
  tags: ["langgraph store"],
  summary: "An item, or null",
  request: { query: z.strictObject({ namespace: z.string().max(4096), key: Key, refresh_ttl: z.enum(["true", "false"]).optional() }) },
  responses: { 200: jsonContent(ItemWire.nullable(), "The item, or null"), ...errs() },
});
const deleteItem = createRoute({
  method: "delete",
  path: "/v1/langgraph/store/items",
  middleware: access("reach_namespace", "conversation", { rate: "langgraph" }),
  tags: ["langgraph store"],
  summary: "Delete an item",
  request: json(z.strictObject({ namespace: Namespace, key: Key })),
  responses: { 204: { description: "Deleted" }, ...errs() },
});
const searchItems = createRoute({
  method: "post",
  path: "/v1/langgraph/store/items/search",
  middleware: access("reach_namespace", "conversation", { rate: "langgraph" }),
  tags: ["langgraph store"],
  summary: "Items under a namespace prefix, filtered by value fields ($eq $ne $gt $gte $lt $lte $in $nin), ranked by `query`",
  request: json(SearchBody),
  responses: { 200: jsonContent(z.object({ items: z.array(SearchItemWire) }), "Newest update first; with `query`, best first with `score`"), ...errs() },
});
const listNamespaces = createRoute({
  method: "post",
  path: "/v1/langgraph/store/namespaces",
  middleware: access("reach_namespace", "conversation", { rate: "langgraph" }),
  tags: ["langgraph store"],
  summary: "Namespaces the key reaches, by prefix / suffix, cut to max_depth",
  request: json(NamespacesBody),
  responses: { 200: jsonContent(z.object({ namespaces: z.array(z.array(z.string())) }), "Namespaces"), ...errs() },
});
const batch = createRoute({
  method: "post",
  path: "/v1/langgraph/store/batch",
  middleware: access("reach_namespace", "conversation", { rate: "langgraph" }),
  tags: ["langgraph store"],
  summary: "Several store operations in one call (EdgeweaveStore.batch); results in order",
  request: json(BatchBody),
  responses: { 200: jsonContent(z.object({ results: z.array(BatchResult.nullable()) }), "One result per op (null for a put)"), ...errs() },
});

type Search = z.infer<typeof SearchBody>;
type Namespaces = z.infer<typeof NamespacesBody>;
const searchOp = (b: Search): StoreOp => ({
  op: "search",
  prefix: b.namespace_prefix,
  filter: b.filter,
  limit: b.limit,
  offset: b.offset,
  refreshTtl: b.refresh_ttl ?? undefined,
  query: b.query,
});
const namespacesOp = (b: Namespaces): StoreOp => ({
  op: "list_namespaces",
  prefix: b.prefix ?? undefined,
  suffix: b.suffix ?? undefined,
  maxDepth: b.max_depth ?? undefined,
  limit: b.limit,
  offset: b.offset,
});
const search = (s: ScopedStore, b: Search) => s.batch([searchOp(b)]).then(([r]) => r as SearchItem[]);
const namespaces = (s: ScopedStore, b: Namespaces) => s.batch([namespacesOp(b)]).then(([r]) => r as string[][]);
const putOrDelete = (s: ScopedStore, b: z.infer<typeof PutBody>) =>
  s.batch([{ op: "put", namespace: b.namespace, key: b.key, value: b.value, ttl: b.ttl, index: b.index }]);

/** The caller's store, with the tenant's item and byte quotas. */
const storeOf = (c: Context<AppEnv>) =>
  new ScopedStore(c.env.DB, c.get("principal"), { items: quotaOf(c.env, "store_items"), bytes: quotaOf(c.env, "store_bytes") });

export const storeRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(putItem, async (c) => {
    const b = c.req.valid("json");
    await putOrDelete(storeOf(c), b);
    return c.body(null, 204);
  })
  .openapi(getItem, async (c) => {
    const q = c.req.valid("query");
    const store = storeOf(c);
    return c.json(await store.get(q.namespace.split("."), q.key, { refreshTtl: q.refresh_ttl !== "false" }), 200);
  })
  .openapi(deleteItem, async (c) => {
    const b = c.req.valid("json");
    await storeOf(c).delete(b.namespace, b.key);
    return c.body(null, 204);
  })
  .openapi(searchItems, async (c) => c.json({ items: await search(storeOf(c), c.req.valid("json")) }, 200))
  .openapi(listNamespaces, async (c) => c.json({ namespaces: await namespaces(storeOf(c), c.req.valid("json")) }, 200))
  .openapi(batch, async (c) => {
    await chargeOps(c.env, c.get("principal"), c.req.valid("json").ops.length, { rate: "langgraph" });
    const store = storeOf(c);
    const ops = c.req.valid("json").ops.map((op): StoreOp => {
      if (op.op === "get") return { op: "get", namespace: op.namespace, key: op.key, refreshTtl: op.refresh_ttl ?? undefined };
      if (op.op === "put") return { op: "put", namespace: op.namespace, key: op.key, value: op.value, ttl: op.ttl, index: op.index };
      return op.op === "search" ? searchOp(op) : namespacesOp(op);
    });
    // All or nothing: ScopedStore.batch checks every op before it runs any, in one D1 transaction.
    const results = (await store.batch(ops)).map((r, i) => {
      const kind = ops[i]!.op;
      return kind === "search" ? { items: r as StoreItem[] } : kind === "list_namespaces" ? { namespaces: r as string[][] } : (r as StoreItem | null);
    });
    return c.json({ results }, 200);
  });
