import { z } from "@hono/zod-openapi";
import { EmbedderConfig, EmbedderRef, EMBEDDED_NAME } from "./embedder-config";
import { MiddlewareSpec } from "./middleware-spec";
import { SERVER_TOOL_NAMES } from "./tool-names";

export const Provider = z.enum(["openai", "anthropic", "custom", "ollama", "groq", "nvidia"]);
export type Provider = z.infer<typeof Provider>;

export const Modality = z.enum(["text", "image", "audio", "video"]);
export type Modality = z.infer<typeof Modality>;

/** Each provider's public API; `custom` has none and must name its own. */
export const DEFAULT_BASE_URL: Record<Provider, string | null> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com/v1",
  groq: "https://api.groq.com/openai/v1",
  nvidia: "https://integrate.api.nvidia.com/v1",
  ollama: "http://localhost:11434",
  custom: null,
};

/** The secret each provider's key is read from unless provider_config.api_key_env names another. */
export const DEFAULT_KEY_ENV: Record<Provider, string | null> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  groq: "GROQ_API_KEY",
  nvidia: "NVIDIA_API_KEY",
  ollama: null,
  custom: null,
};

/** Names travel in URL paths (/v1/models/:name) and headers, so: no slashes, no spaces, ASCII. */
export const ModelName = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits and . _ : - only (put the upstream id in provider_config.model)");

export const Capability = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits and . _ - only");

export const ProviderConfig = z.looseObject({
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  api_key_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, "must be the NAME of a secret, e.g. OPENAI_API_KEY")
    .max(128)
    .optional(),
  model: z.string().min(1).max(256).optional(),
  timeout_ms: z.number().int().positive().max(600_000).optional(),
});

/** Another name for a model, as a client sends it; a trailing `*` matches any suffix (src/routing/aliases.ts). */
export const ModelAlias = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*\*?$/, "a model name, optionally ending in * (claude-sonnet-*)");

/** USD per 1,000 tokens; past $1,000 is a typo (no model costs $1 a token). */
const Price = z.number().finite().min(0).max(1000);

/** The fields of one models.yaml `models:` entry as written. Unknown keys are ignored (stripped). */
export const ModelConfigFields = z.object({
  name: ModelName,
  provider: Provider,
  modalities: z.array(Modality).min(1).default(["text"]),
  capabilities: z.array(Capability).default([]),
  /** Both prices at once (the older form): input_cost_per_1k_tokens and output_cost_per_1k_tokens. */
  cost_per_1k_tokens: Price.optional(),
  input_cost_per_1k_tokens: Price.optional(),
  output_cost_per_1k_tokens: Price.optional(),
  max_tokens: z.number().int().positive().default(4096),
  /** The most tokens the model produces in one answer; a request's max_tokens above it is clamped (with a warning). */
  max_output_tokens: z.number().int().positive().optional(),
  /** Other names for this model on every route; unique across the file (BEM-042). */
  aliases: z.array(ModelAlias).max(64).optional(),
  provider_config: ProviderConfig.default({}),
  extra: z.record(z.string(), z.unknown()).default({}),
});

/**
 * One model, validated. After parsing, `provider_config.base_url` is always set
 * (the provider's public API unless given; `custom` must give one), and
 * `api_key_env` defaults to the provider's usual secret (none for ollama/custom).
 */
export const ModelConfig = ModelConfigFields.superRefine((m, ctx) => {
  if (m.provider === "custom" && m.provider_config.base_url === undefined) {
    ctx.addIssue({ code: "custom", path: ["provider_config", "base_url"], message: "required for provider custom" });
  }
  // One price is read as both; two prices must both be given, or the other one would be a silent guess.
  const both = m.cost_per_1k_tokens !== undefined;
  for (const [field, other] of [
    ["input_cost_per_1k_tokens", "output_cost_per_1k_tokens"],
    ["output_cost_per_1k_tokens", "input_cost_per_1k_tokens"],
  ] as const) {
    if (m[field] === undefined) continue;
    if (both) ctx.addIssue({ code: "custom", path: [field], message: "give cost_per_1k_tokens (both prices) or input and output prices, not both forms" });
    else if (m[other] === undefined) ctx.addIssue({ code: "custom", path: [field], message: `${other} is missing (give both prices)` });
  }
}).transform(({ cost_per_1k_tokens, input_cost_per_1k_tokens, output_cost_per_1k_tokens, ...m }) => {
  const keyEnv = m.provider_config.api_key_env ?? DEFAULT_KEY_ENV[m.provider] ?? undefined;
  const input = input_cost_per_1k_tokens ?? cost_per_1k_tokens ?? 0;
  return {
    ...m,
    /** The input price: what the router compares. */
    cost_per_1k_tokens: input,
    input_cost_per_1k_tokens: input,
    output_cost_per_1k_tokens: output_cost_per_1k_tokens ?? cost_per_1k_tokens ?? 0,
    provider_config: {
      ...m.provider_config,
      base_url: m.provider_config.base_url ?? DEFAULT_BASE_URL[m.provider] ?? "",
      ...(keyEnv !== undefined ? { api_key_env: keyEnv } : {}),
    },
  };
});
export type ModelConfig = z.infer<typeof ModelConfig>;
export type ModelConfigInput = z.input<typeof ModelConfig>;

/** Offline models (the in-process echo responder) only route when the deployment allows it. */
export const isOfflineModel = (m: ModelConfig): boolean => m.extra.offline === true;

/** `extra.auto_route: false`: only used when named explicitly (e.g. a local Ollama a deployed worker cannot reach). */
export const isAutoRoutable = (m: ModelConfig): boolean => m.extra.auto_route !== false;

/** "organization:acme", "session", "docset:d1"; the memory layer resolves and checks grants. */
export const ScopeString = z
  .string()
  .max(200)
  .regex(/^[a-z][a-z0-9_-]*(:[A-Za-z0-9._@*-]+)?$/, 'a scope like "session" or "organization:acme"');

/** A shipped middleware with its settings, validated at build time like the rest of the file. */
export const MiddlewareSetting = MiddlewareSpec;
export type MiddlewareSetting = z.infer<typeof MiddlewareSetting>;

/** A fact kind, as the memory API accepts it (src/memory/facts.ts). */
const FactKind = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, "a fact kind: [a-z][a-z0-9_-]{0,31}");

/** Background fact extraction after turns (src/tasks/extract-facts.ts). */
export const ExtractConfig = z.strictObject({
  /** Where extracted facts go: a scope, or `session` for the turn's thread; written with the grants of the key that ran the turn. */
  scope: ScopeString,
  /** The only kinds the extractor may store. */
  kinds: z.array(FactKind).min(1).max(16),
  /** The extraction model; default: the router's cheapest that fits. */
  model: z.string().min(1).max(128).optional(),
  /** Extract after every N-th turn, from the last N turns. */
  every_turns: z.number().int().min(1).max(100).default(1),
});
export type ExtractConfig = z.infer<typeof ExtractConfig>;

/**
 * Recall of earlier turns (src/thread/recall.ts): when the session does not fit, `share` of the
 * turn budget goes to earlier turns relevant to the input, each with `neighbours` turns either
 * side. `false`: the newest window only. Omitted: the defaults (memory/recall-excerpts.ts).
 */
export const RecallSetting = z.union([
  z.literal(false),
  z.strictObject({
    share: z.number().min(0).max(0.95).default(0.75),
    neighbours: z.number().int().min(0).max(8).default(2),
    /** What ranks earlier turns and facts (docs/concepts/recall-by-meaning.md): words, meaning, or both fused (absent: both). */
    channels: z
      .array(z.enum(["full_text", "dense"]))
      .min(1)
      .max(2)
      .optional(),
  }),
]);
export type RecallSetting = z.infer<typeof RecallSetting>;

const ToolName = z.string().refine((n) => (SERVER_TOOL_NAMES as readonly string[]).includes(n), {
  message: `not a server tool (known: ${SERVER_TOOL_NAMES.join(", ")}; middleware install their own)`,
});

/** One models.yaml `agents:` entry. */
export const AgentConfig = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits and . _ - only"),
    description: z.string().max(2000).optional(),
    /** Routing hints: tags that some model lists as a capability narrow the choice softly. */
    tags: z.array(Capability).default([]),
    system_prompt: z.string().max(100_000).optional(),
    memory_scopes: z.array(ScopeString).default([]),
    /** Fact kinds loaded before any other fact of their scope when the scope does not fit its share. */
    always_kinds: z.array(FactKind).max(32).default([]),
    /** Recall of earlier turns: `{share, neighbours}` (defaults 0.75, 2) or false. */
    recall: RecallSetting.default({ share: 0.75, neighbours: 2 }),
    extract: ExtractConfig.optional(),
    middleware: z.array(MiddlewareSetting).default([]),
    tools: z.array(ToolName).default([]),
    context_schema: z.record(z.string(), z.unknown()).optional(),
    /** Preferred model: used when the request names none and it can serve the request. */
    model: ModelName.optional(),
    /** What embeds its threads' turns for recall by meaning (docs/concepts/recall-by-meaning.md); absent: the file's `embedder`. Facts use the file's. */
    embedder: EmbedderRef.optional(),
  })
  .superRefine((a, ctx) => {
    // A human_in_the_loop tool the agent does not have would never stop a run: a misspelling must not pass silently.
    const own = new Set([...a.tools, ...(a.middleware.some((m) => m.name === "todo_list") ? ["write_todos"] : [])]);
    a.middleware.forEach((m, i) => {
      if (m.name !== "human_in_the_loop") return;
      m.tools.forEach((t, j) => {
        if (!own.has(t))
          ctx.addIssue({
            code: "custom",
            path: ["middleware", i, "tools", j],
            message: `'${t}' is not one of this agent's tools (${[...own].join(", ") || "none"})`,
          });
      });
    });
  });
export type AgentConfig = z.infer<typeof AgentConfig>;

/** Keys the wire formats use for their own fields, so no budget tag can take them. */
const RESERVED_METADATA_KEYS = ["user_id", "capabilities", "memory_scopes"];

/** A request metadata key budgets may be on: as OpenAI's metadata keys (at most 64 characters), without `=` (a budget's target is `key=value`). */
const BudgetMetadataKey = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "letters, digits, _ . : - (at most 64)")
  .refine((k) => !RESERVED_METADATA_KEYS.includes(k), { message: `not one of ${RESERVED_METADATA_KEYS.join(", ")} (each wire format's own field)` });

/** The whole models.yaml. */
export const ModelsFile = z.object({
  models: z.array(ModelConfig).min(1),
  default_model: ModelName.nullish().transform((v) => v ?? null),
  agents: z.array(AgentConfig).default([]),
  /** Embedders besides the built-in one (docs/concepts/recall-by-meaning.md). */
  embedders: z.array(EmbedderConfig).default([]),
  /** The embedder of facts, and of turns unless an agent names its own. */
  embedder: EmbedderRef.default(EMBEDDED_NAME),
  /** The request `metadata` keys budgets may be on (docs/operations/budgets.md). */
  budget_metadata_keys: z.array(BudgetMetadataKey).max(16).default([]),
});
export type ModelsFile = z.infer<typeof ModelsFile>;
