import { z } from "@hono/zod-openapi";

/** The built-in embedder (src/embed/embedded.ts): always available, never listed under `embedders:`. */
export const EMBEDDED_NAME = "embedded";

const EmbedderName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits and . _ - only")
  .refine((n) => n !== EMBEDDED_NAME, { message: `"${EMBEDDED_NAME}" is the built-in embedder's name` });

/** What every remote embedder declares: its model, the length of its vectors (an answer of another length is refused), its price and patience. */
const Remote = {
  name: EmbedderName,
  model: z.string().min(1).max(256),
  dims: z.number().int().min(8).max(4096),
  /** USD per 1,000 input tokens (counted in usage under the embedder's name). */
  cost_per_1k_tokens: z.number().finite().min(0).default(0),
  /** An embedding that takes longer is a failure: recall runs on full-text alone. */
  timeout_ms: z.number().int().positive().max(60_000).default(3000),
};

/** One models.yaml `embedders:` entry: Workers AI through the `AI` binding, or any OpenAI-compatible `/v1/embeddings`. */
export const EmbedderConfig = z.discriminatedUnion("provider", [
  z.strictObject({ ...Remote, provider: z.literal("workers-ai") }),
  z.strictObject({
    ...Remote,
    provider: z.literal("openai"),
    /** The API's root: `${base_url}/embeddings` is called. */
    base_url: z.url({ protocol: /^https?$/ }),
    /** The NAME of the secret holding the key (none: no Authorization header, e.g. a local Ollama). */
    api_key_env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, "must be the NAME of a secret, e.g. OPENAI_API_KEY")
      .max(128)
      .optional(),
  }),
]);
export type EmbedderConfig = z.infer<typeof EmbedderConfig>;

/** A name `embedder:` may take: the built-in one or one of `embedders:`. */
export const EmbedderRef = z.string().min(1).max(64);
