import { access } from "./access";
import { Hono } from "hono";
import { handleMcp } from "../mcp/server";
import type { AppEnv } from "./app-env";

/**
 * POST /mcp (and GET/DELETE, which a stateless server answers 405 per the MCP spec):
 * the Model Context Protocol over Streamable HTTP, behind the same bearer-key
 * authentication and rate limits as /v1.
 */
export const mcpRoutes = new Hono<AppEnv>().all("/mcp", access("any_key", "run"), async (c) => {
  // The access gate has read (and checked) the body; the transport gets it back from Hono's cache.
  const raw = c.req.raw;
  const body = raw.method === "GET" || raw.method === "HEAD" ? undefined : await c.req.arrayBuffer();
  return handleMcp(new Request(raw.url, { method: raw.method, headers: raw.headers, body }), c.env, c.get("principal"));
});
