import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { isOfflineModel, Modality, type ModelConfig, Provider } from "../config/model-config";
import { modelByName, models, modelsCreatedAt, routerFor } from "../routing/bundled";
import type { ModelRouter } from "../routing/router";
import { access } from "./access";
import type { AppEnv } from "./app-env";
import { errorResponses, jsonContent } from "./openapi-errors";
import { validationHook } from "./validation";

export const ModelInfo = z
  .object({
    id: z.string(),
    object: z.literal("model"),
    created: z.number().int(),
    owned_by: z.string(),
    provider: Provider,
    modalities: z.array(Modality),
    capabilities: z.array(z.string()),
    cost_per_1k_tokens: z.number().openapi({ description: "USD per 1,000 input tokens" }),
    max_tokens: z.number().int().openapi({ description: "Context window in tokens" }),
    upstream_model: z.string().openapi({ description: "The id sent to the provider" }),
    api_key_env: z.string().nullable().openapi({ description: "Name of the secret holding the key (never the key)" }),
    offline: z.boolean(),
    available: z.boolean().openapi({ description: "Whether automatic routing may pick it in this deployment" }),
    unavailable_reason: z.string().optional(),
  })
  .openapi("Model");
export type ModelInfo = z.infer<typeof ModelInfo>;

const ModelList = z.object({ object: z.literal("list"), data: z.array(ModelInfo) }).openapi("ModelList");

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
    max_tokens: m.max_tokens,
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
  middleware: access("any_key"),
  tags: ["models"],
  summary: "List configured models (OpenAI list shape, plus routing fields)",
  responses: { 200: jsonContent(ModelList, "The models, in config order"), ...errorResponses() },
});

const getModel = createRoute({
  method: "get",
  path: "/v1/models/{name}",
  middleware: access("any_key"),
  tags: ["models"],
  summary: "One configured model",
  request: {
    params: z.object({
      name: z
        .string()
        .max(256)
        .openapi({ param: { name: "name", in: "path" }, example: "gpt-4o-mini" }),
    }),
  },
  responses: { 200: jsonContent(ModelInfo, "The model"), ...errorResponses("BEM-049") },
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
