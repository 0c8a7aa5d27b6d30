import { EMBEDDED_NAME, type EmbedderConfig } from "../config/embedder-config";
import type { TurnEmbedder } from "./embedder";
import { EmbedCache } from "./embed-cache";
import { EMBEDDED_TURNS } from "./embedded";
import { openAiEmbedder } from "./openai-embeddings";
import { aiBinding, workersAiEmbedder } from "./workers-ai";

/**
 * The embedders models.yaml names (docs/concepts/recall-by-meaning.md), as this deployment runs them: the built-in one
 * (the embedded table, synchronous) or a remote one behind its cache. One per name per isolate.
 */
export type ChosenEmbedder = { name: string; turns: TurnEmbedder; remote?: EmbedCache };

const EMBEDDED: ChosenEmbedder = { name: EMBEDDED_NAME, turns: EMBEDDED_TURNS };

// env is the same object for every request of an isolate.
const built = new WeakMap<object, Map<string, ChosenEmbedder>>();

/** The embedder `name` of `configs` (models.yaml's, checked at build: a name not there is the built-in one) with `env`'s bindings and secrets. */
export function embedderNamed(env: object, name: string, configs: readonly EmbedderConfig[]): ChosenEmbedder {
  const config = configs.find((c) => c.name === name);
  if (!config) return EMBEDDED;
  let mine = built.get(env);
  if (!mine) built.set(env, (mine = new Map()));
  let chosen = mine.get(config.name);
  if (!chosen) {
    const embedder = config.provider === "workers-ai" ? workersAiEmbedder(config, aiBinding(env)) : openAiEmbedder(config, secretOf(env, config.api_key_env));
    const remote = new EmbedCache(embedder);
    chosen = { name: config.name, turns: remote, remote };
    mine.set(config.name, chosen);
  }
  return chosen;
}

/** The embedder of facts in this isolate (models.yaml `embedder`): set where the Worker, a queue batch or a thread object first sees the env. */
let forFacts: ChosenEmbedder = EMBEDDED;
export const factsEmbedder = (): ChosenEmbedder => forFacts;
export function knowFactsEmbedder(chosen: ChosenEmbedder): void {
  forFacts = chosen;
}

function secretOf(env: object, name: string | undefined): string | undefined {
  const v: unknown = name === undefined ? undefined : Reflect.get(env, name);
  return typeof v === "string" && v !== "" ? v : undefined;
}
