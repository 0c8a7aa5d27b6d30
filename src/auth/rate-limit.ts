import type { Principal } from "../core/principal";
import { AppError } from "../core/errors";
import { errorText, log } from "../core/log";

/**
 * Per-key rate limits with the Workers rate-limiting bindings (configured in
 * wrangler.toml; miniflare enforces them locally too). Admin keys count on
 * RATE_LIMIT_ADMIN, members on RATE_LIMIT_MEMBER and the operator key on
 * RATE_LIMIT_OPERATOR (provisioning in bulk), each per key id;
 * webhook deliveries count per hook on RATE_LIMIT_WEBHOOK (checked by the
 * delivery route once the signature holds, so forged requests cannot use up a
 * hook's allowance). The binding only says yes or no, so Retry-After is the
 * configured period.
 */
export const RATE_LIMIT_PERIOD_SECONDS = 60;

export function limited(what: string): AppError {
  return new AppError("BEM-024", `Rate limit exceeded for this ${what}; retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds`, {
    headers: { "retry-after": String(RATE_LIMIT_PERIOD_SECONDS) },
  });
}

/** True when the call may proceed. A limiter that fails is logged and lets the call through. */
export async function withinLimit(limiter: RateLimit, key: string): Promise<boolean> {
  try {
    return (await limiter.limit({ key })).success;
  } catch (e) {
    log.error("rate-limit", { message: errorText(e) });
    return true;
  }
}

export const limiterFor = (env: Env, p: Principal): RateLimit =>
  p.role === "member" ? env.RATE_LIMIT_MEMBER : p.role === "operator" ? env.RATE_LIMIT_OPERATOR : env.RATE_LIMIT_ADMIN;

/** The per-key limit of a bearer-key caller (called by the route's declared access, after authentication).
 * LangGraph's checkpointer and store routes count on their own binding (a graph step is several calls). */
export async function checkKeyRate(env: Env, p: Principal, own?: "langgraph"): Promise<void> {
  if (!(await withinLimit(keyLimiter(env, p, own), `key:${p.keyId}`))) throw limited("key");
}

/** The binding a key's requests count on: the LangGraph routes' own, else its role's. */
const keyLimiter = (env: Env, p: Principal, own?: "langgraph"): RateLimit => (own === "langgraph" ? env.RATE_LIMIT_LANGGRAPH : limiterFor(env, p));

/** Ops one request's count covers in a batch-shaped request (a batch of n ops counts ceil(n / 10) requests). */
export const OPS_PER_REQUEST = 10;

/**
 * A request that carries many ops (a LangGraph store or checkpointer batch, thread state ops,
 * conversation items, an MCP batch's tool calls) counts as many requests as it holds started groups
 * of `per` ops, on the limiter the route's access counted it on (which counted the first). Checked
 * after the body parsed and before any op runs: past the allowance the whole request is 429 BEM-024
 * and none of it runs.
 */
export async function chargeOps(env: Env, p: Principal, ops: number, opts: { rate?: "langgraph"; per?: number } = {}): Promise<void> {
  await chargeRequests(env, p, Math.ceil(ops / (opts.per ?? OPS_PER_REQUEST)) - 1, opts.rate);
}

/** Counts `n` more requests of the key's (e.g. a model step's server tool calls); past the allowance 429 BEM-024. */
export async function chargeRequests(env: Env, p: Principal, n: number, rate?: "langgraph"): Promise<void> {
  const limiter = keyLimiter(env, p, rate);
  for (let extra = n; extra > 0; extra -= CHARGES_AT_ONCE) {
    const charges = Array.from({ length: Math.min(extra, CHARGES_AT_ONCE) }, () => withinLimit(limiter, `key:${p.keyId}`));
    if ((await Promise.all(charges)).includes(false)) throw limited("key");
  }
}

/**
 * Charges sent to the limiter at once: the binding counts one request a call, and a LangGraph batch at its item cap is
 * ~2,500 of them, which one after another were as many round trips before the batch ran. A group that comes back
 * refused stops the rest (past the allowance, at most one group more is counted than one at a time would).
 */
const CHARGES_AT_ONCE = 32;
