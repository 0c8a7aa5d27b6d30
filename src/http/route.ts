import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { requireAgent, routerFor } from "../routing/registry";
import { Content, MessageInput } from "../thread/message";
import type { AppEnv } from "./app-env";
import { errorResponses, jsonContent } from "./openapi-errors";
import { validationHook } from "./validation";

const RouteBody = z
  .object({
    agent_name: z.string().min(1).max(64).optional(),
    content: Content.optional(),
    messages: z.array(MessageInput).max(1000).optional(),
    metadata: z.object({ capabilities: z.array(z.string().max(64)).max(32).optional() }).optional(),
    model_override: z.string().max(128).optional(),
    min_context_tokens: z.number().int().min(0).max(100_000_000).optional(),
  })
  .openapi("RouteRequest");

const TraceEntry = z.object({
  strategy: z.string(),
  input: z.array(z.string()),
  output: z.array(z.string()),
  excluded: z.array(z.object({ model: z.string(), reason: z.string() })),
  note: z.string().optional(),
});

const RouteResponse = z
  .object({
    model: z.string(),
    reason: z.string(),
    candidates: z.array(z.string()).openapi({ description: "Failover order; the first is `model`" }),
    requirements: z.object({
      modalities: z.array(z.string()),
      capabilities: z.array(z.string()),
      capability_source: z.enum(["metadata", "agent_tags", "none"]),
      min_context_tokens: z.number(),
    }),
    trace: z.array(TraceEntry),
  })
  .openapi("RouteResult");

const routeDryRun = createRoute({
  method: "post",
  path: "/v1/route",
  tags: ["models"],
  summary: "Dry run: the model that would answer, the failover candidates and every strategy's trace",
  request: { body: { content: { "application/json": { schema: RouteBody } }, required: true } },
  responses: {
    200: jsonContent(RouteResponse, "The routing decision"),
    ...errorResponses("BEM-041", "BEM-046", "BEM-047", "BEM-077"),
  },
});

/** POST /v1/route: which model would answer this request, and why — without calling it. */
export const routeRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(routeDryRun, (c) => {
  const body = c.req.valid("json");
  const agent = body.agent_name === undefined ? undefined : requireAgent(body.agent_name);
  const r = routerFor(c.env).resolve({
    content: body.content,
    messages: body.messages,
    metadata: body.metadata,
    agent,
    model_override: body.model_override,
    min_context_tokens: body.min_context_tokens,
  });
  return c.json(
    {
      model: r.model.name,
      reason: r.reason,
      candidates: r.candidates.map((m) => m.name),
      requirements: {
        modalities: r.requirements.modalities,
        capabilities: r.requirements.capabilities,
        capability_source: r.requirements.capabilitySource,
        min_context_tokens: r.requirements.minContextTokens,
      },
      trace: r.trace.map((t) => ({ ...t, input: [...t.input], output: [...t.output], excluded: [...t.excluded] })),
    },
    200,
  );
});
