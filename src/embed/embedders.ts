import { EMBEDDED_NAME, type EmbedderConfig } from "../config/embedder-config";
import { compiled } from "../routing/models.generated";
import type { UsageRecord } from "../pipeline/usage";
import type { TurnEmbedder } from "../thread/recall-vectors";
import { EmbedCache } from "./embed-cache";
import { EMBEDDED_TURNS } from "./embedded";
import { openAiEmbedder } from "./openai-embeddings";
import { aiBinding, workersAiEmbedder } from "./workers-ai";

/**
 * The embedders models.yaml names (docs/recall.md), as this deployment runs them: the built-in one
 * (the embedded table, synchronous) or a remote one behind its cache. One per name per isolate.
 */
export type ChosenEmbedder = { name: string; turns: TurnEmbedder; remote?: EmbedCache };

const EMBEDDED: ChosenEmbedder = { name: EMBEDDED_NAME, turns: EMBEDDED_TURNS };

// env is the same object for every request of an isolate.
const built = new WeakMap<object, Map<string, ChosenEmbedder>>();

/** The embedder `name` (absent: the file's default) with `env`'s bindings and secrets; an unknown name is the default's. */
export function embedderNamed(env: object, name: string = compiled.embedder, configs: readonly EmbedderConfig[] = compiled.embedders): ChosenEmbedder {
  const config = configs.find((c) => c.name === name) ?? configs.find((c) => c.name === compiled.embedder);
  if (!config) return EMBEDDED;
  let mine = built.get(env);
  if (!mine) built.set(env, (mine = new Map()));
  let chosen = mine.get(config.name);
  if (!chosen) {
    const embedder =
      config.provider === "workers-ai" ? workersAiEmbedder(config, aiBinding(env)) : openAiEmbedder(config, secretOf(env, config.api_key_env));
    const remote = new EmbedCache(embedder);
    chosen = { name: config.name, turns: remote, remote };
    mine.set(config.name, chosen);
  }
  return chosen;
}

function secretOf(env: object, name: string | undefined): string | undefined {
  const v: unknown = name === undefined ? undefined : Reflect.get(env, name);
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** What `tokens` of embedding by a remote embedder cost, as a usage record under its name (cause "embedding"). */
export function embeddingUsage(remote: EmbedCache, tokens: number): UsageRecord | undefined {
  if (tokens === 0) return undefined;
  const { name, costPer1k } = remote.embedder;
  return { model: name, cause: "embedding", prompt_tokens: tokens, completion_tokens: 0, cost: (tokens / 1000) * costPer1k, requests: 1, estimated_requests: 0 };
}
