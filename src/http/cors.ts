import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../edge/app-env";
import type { Context } from "hono";

/**
 * Browser apps may call the API directly from the origins listed in the
 * CORS_ORIGINS var (comma-separated; "*" for any). Unset: no CORS headers, so
 * browsers keep other sites out. Keys still authenticate every call.
 */
export function allowedOrigin(origin: string, configured: string | undefined): string | null {
  const list = (configured ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
  if (list.includes("*")) return origin || "*";
  return list.includes(origin) ? origin : null;
}

/** Response headers a page's code may read: routing, warnings, the facts bookmark it sends back, a replay's mark, retry hints. */
const EXPOSE = [
  "x-edgeweave-model",
  "x-edgeweave-route",
  "x-edgeweave-warnings",
  "x-edgeweave-bookmark",
  "idempotent-replayed",
  "x-request-id",
  "retry-after",
  "server-timing",
];

/**
 * Preflights (OPTIONS), answered without a key. The request headers the preflight names are allowed as
 * asked (hono/cors without allowHeaders): the SDKs add their own in a browser (the openai SDK's
 * x-stainless-*, @anthropic-ai/sdk's anthropic-dangerous-direct-browser-access) beside edgeweave's
 * (Idempotency-Key, X-Edgeweave-*), and a fixed list refused them all. Only listed origins get an answer,
 * and every call still needs its key.
 */
const preflight = cors({
  origin: (origin, c: Context<AppEnv>) => allowedOrigin(origin, c.env.CORS_ORIGINS),
  exposeHeaders: EXPOSE,
  maxAge: 600,
});

/**
 * hono/cors for preflights; on every other /v1 request the same headers as hono/cors sets, set without
 * touching `c.res` before the handler: hono/cors writes them on a placeholder response first, which
 * makes Hono copy the handler's response to merge them in (a new Response and a header walk per request).
 * Here they are the context's prepared headers (the handler's and the error handler's responses are built
 * with them), and set again on the final response for one a handler built itself (a stream, a replay).
 */
export const corsForApi = createMiddleware<AppEnv>(async (c, next) => {
  // Unset or empty, as the docs say: no CORS headers at all, and a preflight is no CORS answer (browsers keep other sites out).
  if ((c.env.CORS_ORIGINS ?? "").trim() === "") return next();
  if (c.req.method === "OPTIONS") return preflight(c, next);
  const allow = allowedOrigin(c.req.header("origin") || "", c.env.CORS_ORIGINS);
  // LangGraph's API also says where a run is: the SDK reads its id from Content-Location, its stream to rejoin from Location.
  const expose = (c.req.path.startsWith("/v1/agent-protocol/") ? ["content-location", "location", ...EXPOSE] : EXPOSE).join(",");
  if (allow) c.header("Access-Control-Allow-Origin", allow);
  c.header("Access-Control-Expose-Headers", expose);
  await next();
  // As hono/cors: Vary appended once the handler answered (this copies a finalized response once, leaving its headers writable).
  c.header("Vary", "Origin", { append: true });
  if (allow) c.res.headers.set("Access-Control-Allow-Origin", allow);
  c.res.headers.set("Access-Control-Expose-Headers", expose);
});
