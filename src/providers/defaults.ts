import { DEFAULT_BASE_URL, DEFAULT_KEY_ENV, isOfflineModel, type ModelConfig } from "../config/model-config";

// One source for provider defaults: the routing layer's model schema.
export { DEFAULT_BASE_URL, DEFAULT_KEY_ENV, isOfflineModel } from "../config/model-config";

export const DEFAULT_TIMEOUT_MS = 60_000;
export const ANTHROPIC_VERSION = "2023-06-01";
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;
/** The offline echo model is served in-process; this host is never resolved. */
export const OFFLINE_BASE_URL = "http://offline.edgeweave.invalid/v1";

/** The parsed ModelConfig normally carries base_url already; the fallbacks cover hand-built configs. */
export const baseUrlFor = (model: ModelConfig): string | undefined =>
  model.provider_config.base_url || (isOfflineModel(model) ? OFFLINE_BASE_URL : (DEFAULT_BASE_URL[model.provider] ?? undefined));

export const keyEnvFor = (model: ModelConfig): string | undefined => model.provider_config.api_key_env ?? DEFAULT_KEY_ENV[model.provider] ?? undefined;

/** The model id sent upstream: provider_config.model, else the configured name. */
export const upstreamModelId = (model: ModelConfig): string => model.provider_config.model ?? model.name;

export const timeoutFor = (model: ModelConfig): number => model.provider_config.timeout_ms ?? DEFAULT_TIMEOUT_MS;
