import type { Context } from "hono";
import { AppError } from "../core/errors";
import type { AppEnv } from "../edge/app-env";

/**
 * Answers with one file of the static assets (dist/public, the ASSETS binding) under the
 * given CSP. The worker runs first for every request, so a file is reachable only through
 * a route that calls this; a missing file is the usual 404.
 */
export async function serveAsset(c: Context<AppEnv>, path: string, csp: string, cacheControl = "no-cache"): Promise<Response> {
  const url = new URL(path, c.req.url);
  const conditional = c.req.header("if-none-match");
  const res = await c.env.ASSETS.fetch(url, { headers: conditional ? { "if-none-match": conditional } : {} });
  if (res.status === 404) throw new AppError("BEM-002");
  // nosniff, no referrer and no framing come from secureHeaders (src/http/app.ts).
  const headers = new Headers(res.headers);
  headers.set("content-security-policy", csp);
  headers.set("cache-control", cacheControl);
  return new Response(res.body, { status: res.status, headers });
}
