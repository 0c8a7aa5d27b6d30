import { access } from "./access";
import { Hono } from "hono";
import { AppError } from "../core/errors";
import { handleMcp } from "../mcp/server";
import type { AppEnv } from "./app-env";

/**
 * POST /mcp: the Model Context Protocol over Streamable HTTP, behind the same bearer-key
 * authentication and rate limits as /v1. The server is stateless (no Mcp-Session-Id), so the
 * spec's two other methods have nothing to serve: GET would open a stream for server-initiated
 * messages, which a server keeping nothing between requests never sends ("MUST either return
 * text/event-stream … or else 405"), and DELETE ends a session there is none of (405 allowed).
 * Both are 405 BEM-003 with `Allow: POST`, after the key is checked, as a wrong method on /v1.
 */
export const mcpRoutes = new Hono<AppEnv>().all("/mcp", access("any_key", "run"), async (c) => {
  const raw = c.req.raw;
  if (raw.method !== "POST") throw new AppError("BEM-003", `${raw.method} is not served here; use POST`, { headers: { allow: "POST" } });
  // The access gate has read (and checked) the body; the transport gets it back from Hono's cache.
  const body = await c.req.arrayBuffer();
  return handleMcp(new Request(raw.url, { method: raw.method, headers: raw.headers, body }), c.env, c.get("principal"));
});
