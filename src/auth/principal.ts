import { z } from "@hono/zod-openapi";

/** The operator's tenant id: its facts (the `system` scope) are stored under tenant ''. */
export const OPERATOR_TENANT = "";

/** Who is calling: resolved from the API key, never from the request body. */
export const Principal = z.object({
  kind: z.enum(["operator", "tenant"]),
  tenant: z.string(),
  role: z.enum(["operator", "admin", "member"]),
  keyId: z.string(),
  /**
   * Scope patterns the key may read/write beyond the system scope and its current session:
   * exact "organization:acme", wildcard "docset:*", or "*" (every scope of the tenant; admins).
   */
  grants: z.array(z.string()),
});
export type Principal = z.infer<typeof Principal>;

export const operatorPrincipal = (): Principal => ({
  kind: "operator",
  tenant: OPERATOR_TENANT,
  role: "operator",
  keyId: "operator",
  grants: ["system"],
});
