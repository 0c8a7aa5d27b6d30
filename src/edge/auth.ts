import type { Context } from "hono";
import { digestOf, isSecret } from "../auth/keys";
import { toHex } from "../core/encoding";
import { operatorPrincipal, type Principal } from "../core/principal";
import { AppError } from "../core/errors";
import type { AppEnv } from "./app-env";
import { tenantPrincipal } from "./unknown-keys";

const BEARER = /^Bearer\s+(.+)$/i;

/**
 * The key the caller presents: `Authorization: Bearer <key>` (OpenAI's SDKs) or `x-api-key: <key>`
 * (Anthropic's SDK, Claude Code with ANTHROPIC_API_KEY, LangGraph's SDK `new Client({ apiKey })`).
 * Both may come (Claude Code can send both); they must then carry the same key, since answering
 * for one of two different keys would let a proxy's header silently win over the client's (BEM-170).
 */
export function presentedKey(c: Context<AppEnv>): string {
  const header = c.req.header("authorization");
  const bearer = header ? BEARER.exec(header)?.[1]?.trim() || undefined : undefined;
  const xApiKey = c.req.header("x-api-key")?.trim() || undefined;
  if (bearer && xApiKey && bearer !== xApiKey) throw new AppError("BEM-170", "Authorization and x-api-key carry different keys; send one key");
  const presented = bearer ?? xApiKey;
  if (!presented) throw new AppError("BEM-020", "Send 'Authorization: Bearer <key>' or 'x-api-key: <key>'");
  return presented;
}

/**
 * Resolves the caller from its key (presentedKey): the operator key (secret
 * OPERATOR_KEY, compared in constant time) or a tenant key (looked up by its SHA-256).
 * Resolved tenant keys are cached per isolate for 10 s (KEY_CACHE_MS): a revoked key fails at once
 * on the isolate that revoked it and within 10 s everywhere else. Unknown keys are cached as
 * unknown for 10 s and throttled per client address (src/edge/unknown-keys.ts).
 * Called by each route's declared access (src/edge/access.ts), so a route that takes
 * no key (pages, signed webhook deliveries) says so where it is declared.
 */
export async function resolvePrincipal(c: Context<AppEnv>): Promise<Principal> {
  const presented = presentedKey(c);
  const digest = await digestOf(presented);
  const operatorKey = c.env.OPERATOR_KEY;
  if (operatorKey && (await isSecret(digest, operatorKey))) return operatorPrincipal();
  // 401 BEM-021, or 429 BEM-099 when this address has tried too many unknown keys.
  return tenantPrincipal(c, presented, toHex(digest));
}
