import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { isOfflineModel, Modality, type ModelConfig, Provider } from "../config/model-config";
import { modelByName, models, modelsCreatedAt, routerFor } from "../routing/bundled";
import type { ModelRouter } from "../routing/router";
import { createMiddleware } from "hono/factory";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { issueSummary, validationHook } from "../edge/validation";

export const ModelInfo = z
  .object({
    id: z.string(),
    object: z.literal("model"),
    created: z.number().int(),
    owned_by: z.string(),
    provider: Provider,
    modalities: z.array(Modality),
    capabilities: z.array(z.string()),
    cost_per_1k_tokens: z.number().openapi({ description: "USD per 1,000 input tokens (the same as input_cost_per_1k_tokens)" }),
    input_cost_per_1k_tokens: z.number().openapi({ description: "USD per 1,000 input tokens; 0: free" }),
    output_cost_per_1k_tokens: z.number().openapi({ description: "USD per 1,000 output tokens; 0: free" }),
    max_tokens: z.number().int().openapi({ description: "Context window in tokens" }),
    max_output_tokens: z.number().int().optional().openapi({ description: "The most tokens one answer may have; larger requests are clamped" }),
    aliases: z.array(z.string()).optional().openapi({ description: "Other names requests may use (a trailing * matches any suffix)" }),
    upstream_model: z.string().openapi({ description: "The id sent to the provider" }),
    api_key_env: z.string().nullable().openapi({ description: "Name of the secret holding the key (never the key)" }),
    offline: z.boolean(),
    available: z.boolean().openapi({ description: "Whether automatic routing may pick it in this deployment" }),
    unavailable_reason: z.string().optional(),
  })
  .openapi("Model");
export type ModelInfo = z.infer<typeof ModelInfo>;

const ModelList = z.object({ object: z.literal("list"), data: z.array(ModelInfo) }).openapi("ModelList");

/** Anthropic's model object, for Anthropic clients (Claude Code's gateway model discovery sends anthropic-version). */
const AnthropicModel = z.object({ type: z.literal("model"), id: z.string(), display_name: z.string(), created_at: z.string() }).openapi("AnthropicModel");
const AnthropicModelList = z
  .object({ data: z.array(AnthropicModel), has_more: z.boolean(), first_id: z.string().nullable(), last_id: z.string().nullable() })
  .openapi("AnthropicModelList");

const anthropicModel = (m: ModelConfig) => ({
  type: "model" as const,
  id: m.name,
  display_name: m.name,
  created_at: new Date(modelsCreatedAt * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
});

const AnthropicPage = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().openapi({ description: "Anthropic shape only: page size (default 20)" }),
  after_id: z.string().max(256).optional(),
  before_id: z.string().max(256).optional(),
});

/**
 * Anthropic's shapes are a second answer of the same routes, chosen by a header: outside the typed
 * response (hono/client sees the OpenAI shape), documented on the route and in the spec's schemas.
 */
const anthropicShape = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header("anthropic-version") === undefined) return next();
  const name = c.req.param("name");
  if (name === undefined) {
    const page = AnthropicPage.safeParse(c.req.query());
    if (!page.success) throw new AppError("BEM-011", issueSummary(page.error, c.req.query(), "query"));
    return c.json(AnthropicModelList.parse(anthropicPage(models, page.data)), 200);
  }
  const m = modelByName(name);
  if (!m) throw new AppError("BEM-049", "Unknown model name; GET /v1/models lists them");
  return c.json(AnthropicModel.parse(anthropicModel(m)), 200);
});

/**
 * Where an after_id / before_id sits in the list. An id the list does not hold is BEM-011: read as
 * "from the start" it handed a paging client the first page again, which it pages through forever.
 */
function indexOfId(list: readonly ModelConfig[], field: "after_id" | "before_id", id: string): number {
  const at = list.findIndex((m) => m.name === id);
  if (at < 0) throw new AppError("BEM-011", `${field}: '${id.slice(0, 80)}' is not a model id of this list (GET /v1/models lists them)`);
  return at;
}

/** One page in Anthropic's list shape: after_id / before_id / limit as Anthropic's API takes them. */
function anthropicPage(list: readonly ModelConfig[], q: z.infer<typeof AnthropicPage>) {
  let from = 0;
  let to = list.length;
  if (q.after_id !== undefined) from = indexOfId(list, "after_id", q.after_id) + 1;
  if (q.before_id !== undefined) to = indexOfId(list, "before_id", q.before_id);
  const limit = q.limit ?? 20;
  const backwards = q.before_id !== undefined && q.after_id === undefined;
  const start = backwards ? Math.max(from, to - limit) : from;
  const end = backwards ? to : Math.min(to, from + limit);
  const data = list.slice(start, end).map(anthropicModel);
  // has_more looks the way the page goes, as Anthropic's does: before_id pages toward the start.
  const more = backwards ? start > from : end < to;
  return { data, has_more: data.length > 0 && more, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

// Only public routing facts: provider_config's other fields (base_url, headers, ...) stay server-side.
function describe(m: ModelConfig, router: ModelRouter): ModelInfo {
  const available = router.availabilityOf(m.name);
  return {
    id: m.name,
    object: "model",
    created: modelsCreatedAt,
    owned_by: m.provider,
    provider: m.provider,
    modalities: m.modalities,
    capabilities: m.capabilities,
    cost_per_1k_tokens: m.cost_per_1k_tokens,
    input_cost_per_1k_tokens: m.input_cost_per_1k_tokens,
    output_cost_per_1k_tokens: m.output_cost_per_1k_tokens,
    max_tokens: m.max_tokens,
    ...(m.max_output_tokens !== undefined ? { max_output_tokens: m.max_output_tokens } : {}),
    ...(m.aliases?.length ? { aliases: m.aliases } : {}),
    upstream_model: m.provider_config.model ?? m.name,
    api_key_env: m.provider_config.api_key_env ?? null,
    offline: isOfflineModel(m),
    available: available === true,
    ...(available === true ? {} : { unavailable_reason: available }),
  };
}

const listModels = createRoute({
  method: "get",
  path: "/v1/models",
  // Anthropic clients (the SDK's models.list, Claude Code's gateway model discovery) send anthropic-version.
  middleware: [access("any_key"), anthropicShape] as const,
  tags: ["models"],
  summary: "List configured models (OpenAI list shape plus routing fields; Anthropic's shape with anthropic-version)",
  responses: {
    200: jsonContent(
      ModelList,
      "The models, in config order. With an `anthropic-version` header: an AnthropicModelList page (`limit`, `after_id`, `before_id`)",
    ),
    ...errorResponses(),
  },
});

const getModel = createRoute({
  method: "get",
  path: "/v1/models/{name}",
  middleware: [access("any_key"), anthropicShape] as const,
  tags: ["models"],
  summary: "One configured model, by name or alias (Anthropic's shape with anthropic-version)",
  request: {
    params: z.object({
      name: z
        .string()
        .max(256)
        .openapi({ param: { name: "name", in: "path" }, example: "gpt-4o-mini" }),
    }),
  },
  responses: { 200: jsonContent(ModelInfo, "The model (with an `anthropic-version` header: an AnthropicModel)"), ...errorResponses("BEM-049") },
});

/** GET /v1/models and /v1/models/{name}: the OpenAI list shape plus our routing fields. One chain, so the type carries both routes. */
export const modelRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listModels, (c) => {
    const router = routerFor(c.env);
    return c.json({ object: "list" as const, data: models.map((m) => describe(m, router)) }, 200);
  })
  .openapi(getModel, (c) => {
    const { name } = c.req.valid("param");
    const m = modelByName(name);
    if (!m) throw new AppError("BEM-049", "Unknown model name; GET /v1/models lists them");
    return c.json(describe(m, routerFor(c.env)), 200);
  });
