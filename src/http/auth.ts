import type { Context } from "hono";
import { sameSecret } from "../auth/keys";
import { operatorPrincipal, type Principal } from "../auth/principal";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";
import { tenantPrincipal } from "./unknown-keys";

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * Resolves the caller from `Authorization: Bearer <key>`: the operator key (secret
 * OPERATOR_KEY, compared in constant time) or a tenant key (looked up by its SHA-256).
 * Resolved tenant keys are cached per isolate for 10 s (KEY_CACHE_MS): a revoked key fails at once
 * on the isolate that revoked it and within 10 s everywhere else. Unknown keys are cached as
 * unknown for 10 s and throttled per client address (src/http/unknown-keys.ts).
 * Called by each route's declared access (src/http/access.ts), so a route that takes
 * no key (pages, signed webhook deliveries) says so where it is declared.
 */
export async function resolvePrincipal(c: Context<AppEnv>): Promise<Principal> {
  const header = c.req.header("authorization");
  const presented = header ? BEARER.exec(header)?.[1]?.trim() : undefined;
  if (!presented) throw new AppError("BEM-020", "Send 'Authorization: Bearer <key>'");

  const operatorKey = c.env.OPERATOR_KEY;
  if (operatorKey && (await sameSecret(presented, operatorKey))) return operatorPrincipal();
  // 401 BEM-021, or 429 BEM-099 when this address has tried too many unknown keys.
  return tenantPrincipal(c, presented);
}
