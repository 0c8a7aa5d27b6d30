import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { requireAgent, routerFor } from "../routing/bundled";
import { Content } from "../core/message";
import { ChatMessage } from "../edge/chat-schemas";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";

const RouteBody = z
  .object({
    agent_name: z.string().min(1).max(64).optional(),
    content: Content.optional(),
    messages: z.array(ChatMessage).max(1000).optional(),
    metadata: z.object({ capabilities: z.array(z.string().max(64)).max(32).optional() }).optional(),
    model_override: z.string().max(128).optional(),
    min_context_tokens: z.number().int().min(0).max(100_000_000).optional(),
    // The chat endpoint's names for the same things, so a chat body can be dry-run as it is.
    agent: z.string().min(1).max(64).optional().openapi({ description: "Same as agent_name (chat completions' name)" }),
    model: z.string().max(128).optional().openapi({ description: "Same as model_override; `auto` routes" }),
    capabilities: z.array(z.string().max(64)).max(32).optional().openapi({ description: "Same as metadata.capabilities" }),
  })
  .openapi("RouteRequest", { description: "The native invoke fields, or a chat completions body (agent, model, capabilities, messages)." });

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
  middleware: access("any_key", "conversation"),
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
  const agentName = body.agent_name ?? body.agent;
  const agent = agentName === undefined ? undefined : requireAgent(agentName);
  const capabilities = body.metadata?.capabilities ?? body.capabilities;
  const model = body.model_override ?? body.model;
  const r = routerFor(c.env).resolve({
    content: body.content,
    messages: body.messages?.map((m) => ({ ...m, role: m.role === "developer" ? ("system" as const) : m.role })),
    metadata: capabilities ? { capabilities } : undefined,
    agent,
    model_override: model === "auto" ? undefined : model,
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
