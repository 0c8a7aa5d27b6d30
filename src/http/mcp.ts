import { createRoute, z } from "@hono/zod-openapi";
import { access } from "../edge/access";
import { Hono } from "hono";
import { AppError } from "../core/errors";
import { handleMcp } from "../mcp/server";
import type { AppEnv } from "../edge/app-env";
import { errorResponses } from "../edge/openapi-errors";
import { chargeOps } from "../auth/rate-limit";

/**
 * POST /mcp: the Model Context Protocol over Streamable HTTP, behind the same bearer-key
 * authentication and rate limits as /v1 (each tool call of a batch counting as a request). The server is stateless (no Mcp-Session-Id), so the
 * spec's two other methods have nothing to serve: GET would open a stream for server-initiated
 * messages, which a server keeping nothing between requests never sends ("MUST either return
 * text/event-stream … or else 405"), and DELETE ends a session there is none of (405 allowed).
 * Both are 405 BEM-003 with `Allow: POST`, after the key is checked, as a wrong method on /v1.
 */
export const mcpRoutes = new Hono<AppEnv>().all("/mcp", access("any_key", "conversation"), async (c) => {
  const raw = c.req.raw;
  if (raw.method !== "POST") throw new AppError("BEM-003", `${raw.method} is not served here; use POST`, { headers: { allow: "POST" } });
  // The access gate has read (and checked) the body; the transport gets it back from Hono's cache.
  const body = await c.req.arrayBuffer();
  // Each tool call counts as one request would (a request without any counts once): a batch of n is
  // checked n - 1 more times before any runs; past the allowance none of its calls run.
  await chargeOps(c.env, c.get("principal"), toolCallsIn(body), { per: 1 });
  return handleMcp(new Request(raw.url, { method: raw.method, headers: raw.headers, body }), c.env, c.get("principal"), (p) => c.executionCtx.waitUntil(p));
});

/** The JSON-RPC requests of a body (one message or a batch) that call a tool; anything unparsable counts none (the transport refuses it). */
function toolCallsIn(body: ArrayBuffer): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return 0;
  }
  const messages: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  return messages.filter((m) => typeof m === "object" && m !== null && "id" in m && (m as { method?: unknown }).method === "tools/call").length;
}

const JsonRpc = z
  .looseObject({ jsonrpc: z.literal("2.0"), id: z.union([z.string(), z.number()]).optional(), method: z.string().optional(), params: z.unknown().optional() })
  .openapi("JsonRpcMessage");

/**
 * POST /mcp in /openapi.json, as docs/reference/api.md lists it. Only documented here: the `all` route above
 * serves it (and answers GET and DELETE with 405), and MCP's own schema is the protocol's, not ours.
 */
export const mcpDoc = createRoute({
  method: "post",
  path: "/mcp",
  tags: ["mcp"],
  summary: "Model Context Protocol (Streamable HTTP, stateless): tools remember, recall, forget, search_threads, get_thread",
  request: { body: { content: { "application/json": { schema: z.union([JsonRpc, z.array(JsonRpc)]) } }, required: true } },
  responses: {
    200: {
      description:
        "JSON-RPC responses (JSON, or one SSE stream when the client accepts only that); a tool error is a result with isError, its text starting with its code",
      content: { "application/json": { schema: z.union([JsonRpc, z.array(JsonRpc)]) }, "text/event-stream": { schema: z.string() } },
    },
    202: { description: "Notifications and responses only: nothing to answer" },
    ...errorResponses("BEM-003", "BEM-013", "BEM-014"),
  },
});
