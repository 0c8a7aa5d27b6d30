import { z } from "@hono/zod-openapi";

/** Who is calling: resolved from the API key, never from the request body. */
export const Principal = z.object({
  kind: z.enum(["operator", "tenant"]),
  tenant: z.string(),
  role: z.enum(["operator", "admin", "member"]),
  keyId: z.string(),
  /** Scope patterns the key may read/write beyond its own sessions, e.g. "organization:acme", "docset:*". */
  grants: z.array(z.string()),
});
export type Principal = z.infer<typeof Principal>;
