import type { MiddlewareHandler } from "hono";
import { every } from "hono/combine";
import { createMiddleware } from "hono/factory";
import { authorize, type Action } from "../auth/policy";
import { idempotency } from "./idempotency";
import type { AppEnv } from "./app-env";
import { resolvePrincipal } from "./auth";
import { BODY_LIMITS, capBody, guardJson, guardJsonUpTo, MAX_LANGGRAPH_JSON_ITEMS, MAX_MESSAGES_JSON_ITEMS } from "./limits";
import { checkKeyRate } from "../auth/rate-limit";

/**
 * What a route needs, declared on the route itself (`createRoute({ middleware: access(…) })`):
 * a policy action (bearer key, per-key rate limit, then the role column of POLICY), or
 * `public` (no key: pages, the spec) or `signed` (the request carries its own credential,
 * checked by the route: webhook deliveries). Then the body limit, and for JSON bodies the
 * JSON checks; then, on POSTs that run a turn or write (`idempotent: true`), the
 * Idempotency-Key layer (after the checks: it hashes the checked body). Nothing matches
 * paths elsewhere.
 */
export type Access = Action | "public" | "signed";
export type BodySize = keyof typeof BODY_LIMITS;
export type Declared = { access: Access; body: BodySize; idempotent: boolean };

const declarations = new WeakMap<object, Declared>();
const guardLangGraphJson = guardJsonUpTo(MAX_LANGGRAPH_JSON_ITEMS);
const guardMessagesJson = guardJsonUpTo(MAX_MESSAGES_JSON_ITEMS);

/**
 * `rate: "langgraph"` counts the key on LangGraph's own limiter (a graph step is several calls);
 * `idempotent: true` honours `Idempotency-Key` (src/edge/idempotency.ts).
 */
export function access(need: Access, body: BodySize = "none", opts: { rate?: "langgraph"; idempotent?: boolean } = {}): MiddlewareHandler<AppEnv> {
  const gate = createMiddleware<AppEnv>(async (c, next) => {
    if (need !== "public" && need !== "signed") {
      const principal = await resolvePrincipal(c);
      c.set("principal", principal);
      c.get("timings").lap("auth");
      // After auth (unauthenticated callers cost no body read), before any body is read.
      await checkKeyRate(c.env, principal, opts.rate);
      authorize(principal, need);
    }
    return next();
  });
  const chain: MiddlewareHandler<AppEnv>[] = [gate, capBody(BODY_LIMITS[body])];
  if (body === "small" || body === "conversation") chain.push(guardJson);
  if (body === "langgraph") chain.push(guardLangGraphJson);
  if (body === "messages") chain.push(guardMessagesJson);
  const idempotent = opts.idempotent === true;
  if (idempotent) chain.push(idempotency);
  const declared = every(...chain) as MiddlewareHandler<AppEnv>;
  declarations.set(declared, { access: need, body, idempotent });
  return declared;
}

/** The declaration behind a handler of `app.routes`, if it is an access gate (tests read every route's). */
export const declaredBy = (handler: unknown): Declared | undefined => (typeof handler === "function" ? declarations.get(handler) : undefined);
