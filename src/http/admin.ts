import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { parseGrant } from "../auth/grants";
import { authorize } from "../auth/policy";
import { ApiKeyInfo, createKey, createTenant, KeyRole, listKeys, listTenants, revokeKey, Tenant, TenantId } from "../auth/tenant-store";
import type { ErrorCode } from "../core/errors";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { assertRoom } from "../auth/quotas";
import { pageOf, pageQuery, pageStart } from "./paging";

/** An admin route's errors: the role check's 403 and `codes`. */
export const errors = (...codes: ErrorCode[]) => errorResponses("BEM-022", ...codes);

export const TenantParam = z.object({ tenant: TenantId.openapi({ param: { name: "tenant", in: "path" } }) });
const KeyParams = TenantParam.extend({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "key_0f3a…" }),
});

const CreateTenant = z.strictObject({ id: TenantId, name: z.string().max(200).optional() }).openapi("CreateTenant");
const TenantList = z.object({ tenants: z.array(Tenant), next_after: z.string().nullable() }).openapi("TenantList");
const CreateKey = z
  .strictObject({
    role: KeyRole,
    scopes: z
      .array(z.string().max(200))
      .max(64)
      .optional()
      .openapi({
        description: "Grant patterns for member keys: 'organization:acme', 'docset:*', '*'. Admin keys always hold '*'.",
        example: ["organization:acme", "docset:*"],
      }),
    name: z.string().max(200).optional(),
  })
  .openapi("CreateKey");
const CreatedKey = ApiKeyInfo.extend({ key: z.string().openapi({ description: "The key itself: shown once, stored only as a SHA-256 hash." }) }).openapi(
  "CreatedKey",
);

const createTenantRoute = createRoute({
  method: "post",
  path: "/v1/admin/tenants",
  middleware: access("manage_tenants", "small"),
  tags: ["admin"],
  summary: "Create a tenant (operator)",
  request: { body: { content: { "application/json": { schema: CreateTenant } }, required: true } },
  responses: { 201: jsonContent(Tenant, "The tenant"), ...errors("BEM-050") },
});

const listTenantsRoute = createRoute({
  method: "get",
  path: "/v1/admin/tenants",
  middleware: access("manage_tenants"),
  tags: ["admin"],
  summary: "List tenants (operator), by id",
  request: {
    query: z.strictObject({
      limit: z.coerce.number().int().min(1).max(1000).optional(),
      after: z.string().max(64).optional().openapi({ description: "next_after of the previous page (a tenant id; another string is 400 BEM-011)" }),
    }),
  },
  responses: { 200: jsonContent(TenantList, "A page of tenants"), ...errors() },
});

const createKeyRoute = createRoute({
  method: "post",
  path: "/v1/admin/tenants/{tenant}/keys",
  middleware: access("manage_keys", "small"),
  tags: ["admin"],
  summary: "Create an API key for a tenant (the key is returned once)",
  request: { params: TenantParam, body: { content: { "application/json": { schema: CreateKey } }, required: true } },
  responses: { 201: jsonContent(CreatedKey, "The key, shown once"), ...errors("BEM-051", "BEM-060") },
});

const listKeysRoute = createRoute({
  method: "get",
  path: "/v1/admin/tenants/{tenant}/keys",
  middleware: access("manage_keys"),
  tags: ["admin"],
  summary: "List a tenant's keys in creation order, paged (never the keys or their hashes)",
  request: {
    params: TenantParam,
    query: z.strictObject(pageQuery("Keys", 1000, 100)),
  },
  responses: {
    200: jsonContent(
      z.object({ keys: z.array(ApiKeyInfo), next_cursor: z.string().nullable() }).openapi("KeyList"),
      "A page of the tenant's keys, oldest first; next_cursor is null on the last",
    ),
    ...errors("BEM-051"),
  },
});

const revokeKeyRoute = createRoute({
  method: "delete",
  path: "/v1/admin/tenants/{tenant}/keys/{id}",
  middleware: access("manage_keys"),
  tags: ["admin"],
  summary: "Revoke a key (at once on this isolate, within 10 s everywhere: keys are cached 10 s)",
  request: { params: KeyParams },
  responses: { 200: jsonContent(ApiKeyInfo, "The revoked key"), ...errors("BEM-052") },
});

/** Tenants and keys: the operator for everything; a tenant admin for its own tenant's keys. */
export const adminRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createTenantRoute, async (c) => {
    const body = c.req.valid("json");
    return c.json(await createTenant(c.env.DB, { id: body.id, name: body.name }), 201);
  })
  .openapi(listTenantsRoute, async (c) => {
    const { limit = 100, after } = c.req.valid("query");
    const rows = await listTenants(c.env.DB, { limit: limit + 1, after });
    const tenants = rows.slice(0, limit);
    const last = tenants[tenants.length - 1];
    return c.json({ tenants, next_after: rows.length > limit && last ? last.id : null }, 200);
  })
  .openapi(createKeyRoute, async (c) => {
    const { tenant } = c.req.valid("param");
    authorize(c.get("principal"), "manage_keys", { tenant });
    const body = c.req.valid("json");
    const scopes = (body.scopes ?? []).map(parseGrant);
    await assertRoom(c.env, tenant, "keys");
    const { info, key } = await createKey(c.env.DB, tenant, { role: body.role, scopes, name: body.name });
    return c.json({ ...info, key }, 201);
  })
  .openapi(listKeysRoute, async (c) => {
    const { tenant } = c.req.valid("param");
    authorize(c.get("principal"), "manage_keys", { tenant });
    const q = c.req.valid("query");
    const limit = q.limit ?? 100;
    const { items: keys, next_cursor } = pageOf("keys", await listKeys(c.env.DB, tenant, limit + 1, pageStart("keys", q.cursor)), limit);
    return c.json({ keys, next_cursor }, 200);
  })
  .openapi(revokeKeyRoute, async (c) => {
    const { tenant, id } = c.req.valid("param");
    authorize(c.get("principal"), "manage_keys", { tenant });
    return c.json(await revokeKey(c.env.DB, tenant, id), 200);
  });
