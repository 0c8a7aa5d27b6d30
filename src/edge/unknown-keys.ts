import type { Context } from "hono";
import type { Principal } from "../core/principal";
import { cachedPrincipalForKey, principalForKey } from "../auth/tenant-store";
import { AppError } from "../core/errors";
import type { AppEnv } from "./app-env";
import { RATE_LIMIT_PERIOD_SECONDS, withinLimit } from "../auth/rate-limit";

/**
 * Attempts with keys no tenant holds, counted per client address on RATE_LIMIT_UNKNOWN_KEY
 * (wrangler.toml), so guessing keys cannot buy one D1 lookup per request. Past the limit the
 * answer is 429 BEM-099 (instead of 401) and, for the rest of the period, this isolate answers
 * it before any lookup: a throttled address is served only keys this isolate already resolved
 * (so a valid key behind the same NAT keeps working while it is cached). The same wrong key
 * sent again is also answered from a short negative cache (src/auth/tenant-store.ts).
 *
 * The address is Cloudflare's `cf-connecting-ip`, which clients cannot set. A request without
 * one (local `wrangler dev`, tests) is not throttled.
 */
const throttledUntil = new Map<string, number>();

function throttled(): AppError {
  return new AppError("BEM-099", `Too many unknown API keys from this address; retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds`, {
    headers: { "retry-after": String(RATE_LIMIT_PERIOD_SECONDS) },
  });
}

/** The tenant principal of a presented (non-operator) key, by its SHA-256 `hash`, or 401 BEM-021 / 429 BEM-099. */
export async function tenantPrincipal(c: Context<AppEnv>, presented: string, hash: string, now = Date.now()): Promise<Principal> {
  const address = c.req.header("cf-connecting-ip");
  if (address !== undefined && (throttledUntil.get(address) ?? 0) > now) {
    const cached = cachedPrincipalForKey(presented, hash, now);
    if (cached) return cached;
    throw throttled();
  }
  const principal = await principalForKey(c.env.DB, presented, hash, now);
  if (principal) return principal;
  if (address !== undefined && !(await withinLimit(c.env.RATE_LIMIT_UNKNOWN_KEY, `ip:${address}`))) {
    if (throttledUntil.size > 10_000) throttledUntil.clear(); // bounded: a botnet cannot grow memory
    throttledUntil.set(address, now + RATE_LIMIT_PERIOD_SECONDS * 1000);
    throw throttled();
  }
  throw new AppError("BEM-021", "The API key is not valid or was revoked");
}
