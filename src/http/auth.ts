import { createMiddleware } from "hono/factory";
import type { AppEnv } from "./app-env";

/**
 * Resolves the caller. Placeholder until the tenancy work: a fixed dev tenant.
 * Route files use `c.get("principal")` and nothing else to know who is calling.
 */
export const authenticate = createMiddleware<AppEnv>(async (c, next) => {
  c.set("principal", { kind: "tenant", tenant: "dev", role: "admin", keyId: "dev", grants: ["*"] });
  await next();
});
