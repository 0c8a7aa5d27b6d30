import type { Context } from "hono";
import { sameSecret } from "../auth/keys";
import { operatorPrincipal, type Principal } from "../auth/principal";
import { principalForKey } from "../auth/tenant-store";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * Resolves the caller from `Authorization: Bearer <key>`: the operator key (secret
 * OPERATOR_KEY, compared in constant time) or a tenant key (looked up by its SHA-256).
 * Resolved tenant keys are cached per isolate for 10 s (KEY_CACHE_MS): a revoked key fails at once
 * on the isolate that revoked it and within 10 s everywhere else.
 * Called by each route's declared access (src/http/access.ts), so a route that takes
 * no key (pages, signed webhook deliveries) says so where it is declared.
 */
export async function resolvePrincipal(c: Context<AppEnv>): Promise<Principal> {
  const header = c.req.header("authorization");
  const presented = header ? BEARER.exec(header)?.[1]?.trim() : undefined;
  if (!presented) throw new AppError("BEM-020", "Send 'Authorization: Bearer <key>'");

  const operatorKey = c.env.OPERATOR_KEY;
  if (operatorKey && (await sameSecret(presented, operatorKey))) return operatorPrincipal();
  const principal = await principalForKey(c.env.DB, presented);
  if (!principal) throw new AppError("BEM-021", "The API key is not valid or was revoked");
  return principal;
}
