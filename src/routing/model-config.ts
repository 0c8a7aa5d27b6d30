import { z } from "@hono/zod-openapi";

export const Provider = z.enum(["openai", "anthropic", "custom", "ollama", "groq", "nvidia"]);
export type Provider = z.infer<typeof Provider>;

export const Modality = z.enum(["text", "image", "audio", "video"]);
export type Modality = z.infer<typeof Modality>;

export const ProviderConfig = z
  .looseObject({
    base_url: z.url().optional(),
    api_key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, "must be the NAME of a secret, e.g. OPENAI_API_KEY").optional(),
    model: z.string().optional(),
    timeout_ms: z.number().int().positive().optional(),
  });
export type ProviderConfig = z.infer<typeof ProviderConfig>;

/** One entry of models.yaml `models:`. Unknown keys are ignored (stripped). */
export const ModelConfig = z.object({
  name: z.string().min(1).max(128),
  provider: Provider,
  modalities: z.array(Modality).min(1).default(["text"]),
  capabilities: z.array(z.string()).default([]),
  cost_per_1k_tokens: z.number().finite().min(0).default(0),
  max_tokens: z.number().int().positive().default(4096),
  provider_config: ProviderConfig.default({}),
  extra: z.record(z.string(), z.unknown()).default({}),
});
export type ModelConfig = z.infer<typeof ModelConfig>;
