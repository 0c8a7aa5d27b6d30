import { Hono } from "hono";
import { handleMcp } from "../mcp/server";
import type { AppEnv } from "./app-env";

/**
 * POST /mcp (and GET/DELETE, which a stateless server answers 405 per the MCP spec):
 * the Model Context Protocol over Streamable HTTP, behind the same bearer-key
 * authentication and rate limits as /v1.
 */
export const mcpRoutes = new Hono<AppEnv>().all("/mcp", (c) => handleMcp(c.req.raw, c.env, c.get("principal")));
