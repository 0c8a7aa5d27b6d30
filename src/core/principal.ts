import { z } from "@hono/zod-openapi";
import { AppError } from "./errors";

/** The operator's tenant id: its facts (the `system` scope) are stored under tenant ''. */
export const OPERATOR_TENANT = "";

/** The four kinds of caller the policy (src/auth/policy.ts) decides for. */
export const Role = z.enum(["operator", "admin", "member", "webhook"]);
export type Role = z.infer<typeof Role>;

/** Who is calling: resolved from the API key (or the webhook's record), never from the request body. */
export const Principal = z.object({
  kind: z.enum(["operator", "tenant", "webhook"]),
  tenant: z.string(),
  role: Role,
  keyId: z.string(),
  /**
   * Scope patterns the key (or hook) may read/write besides `system`: exact "organization:acme",
   * prefix "session:support-*", every id "docset:*", or "*" (every scope of the tenant; admins).
   * Thread `t` is reached through the pattern matching `session:t`.
   */
  grants: z.array(z.string()),
  /** Webhooks only: registered with `rewrite_history: true` by a key that had that right. */
  rewriteHistory: z.boolean().optional(),
  /** Webhooks only: registered with `write_facts: true` (remember / forget within its grants). */
  writeFacts: z.boolean().optional(),
});
export type Principal = z.infer<typeof Principal>;

export const operatorPrincipal = (): Principal => ({
  kind: "operator",
  tenant: OPERATOR_TENANT,
  role: "operator",
  keyId: "operator",
  grants: ["system"],
});

/** The caller's tenant, for what only a tenant key may touch; 403 BEM-022 with `refusal` otherwise. */
export function tenantOf(p: Principal, refusal: string): string {
  if (p.kind !== "tenant") throw new AppError("BEM-022", refusal);
  return p.tenant;
}
