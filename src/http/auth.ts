import { createMiddleware } from "hono/factory";
import { sameSecret } from "../auth/keys";
import { operatorPrincipal } from "../auth/principal";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";
import { tenantPrincipal } from "./unknown-keys";

/**
 * /v1 routes that do NOT take a bearer key because the request carries its own
 * credential (checked by the route itself). Extend here, nowhere else.
 */
export const AUTH_EXEMPT: ReadonlyArray<{ method: string; path: RegExp; why: string }> = [
  { method: "POST", path: /^\/v1\/webhooks\/[^/]+$/, why: "webhook deliveries are authenticated by their HMAC signature" },
];

export const isAuthExempt = (method: string, path: string): boolean =>
  AUTH_EXEMPT.some((e) => e.method === method && e.path.test(path));

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * Resolves the caller from `Authorization: Bearer <key>`: the operator key (secret
 * OPERATOR_KEY, compared in constant time) or a tenant key (looked up by its SHA-256;
 * see tenant-store.ts for the per-isolate caches and unknown-keys.ts for the throttle).
 * Route files use `c.get("principal")` and nothing else to know who is calling.
 */
export const authenticate = createMiddleware<AppEnv>(async (c, next) => {
  if (isAuthExempt(c.req.method, c.req.path)) return next();

  const header = c.req.header("authorization");
  const presented = header ? BEARER.exec(header)?.[1]?.trim() : undefined;
  if (!presented) throw new AppError("BEM-020", "Send 'Authorization: Bearer <key>'");

  const operatorKey = c.env.OPERATOR_KEY;
  if (operatorKey && (await sameSecret(presented, operatorKey))) {
    c.set("principal", operatorPrincipal());
    return next();
  }
  // 401 BEM-021, or 429 BEM-099 when this address has tried too many unknown keys.
  const principal = await tenantPrincipal(c, presented);
  c.set("principal", principal);
  return next();
});
