import { cors } from "hono/cors";
import type { AppEnv } from "./app-env";
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

export const corsForApi = cors({
  origin: (origin, c: Context<AppEnv>) => allowedOrigin(origin, c.env.CORS_ORIGINS),
  allowHeaders: ["authorization", "x-api-key", "content-type", "x-thread-id", "anthropic-version", "anthropic-beta"],
  exposeHeaders: ["x-edgeweave-model", "x-edgeweave-route", "x-edgeweave-warnings", "x-request-id", "retry-after", "server-timing"],
  maxAge: 600,
});
