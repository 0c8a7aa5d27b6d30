import type { EmbedderConfig } from "../config/embedder-config";
import type { AgentConfig, ModelConfig } from "../config/model-config";

/** The shape of src/routing/models.generated.ts. */
export type CompiledModels = {
  models: ModelConfig[];
  defaultModel: string | null;
  agents: AgentConfig[];
  /** models.yaml `embedders:` and the default `embedder` (docs/concepts/recall-by-meaning.md). */
  embedders: EmbedderConfig[];
  embedder: string;
  /** models.yaml `budget_metadata_keys`: the request metadata keys budgets may be on. */
  budgetMetadataKeys: string[];
  /** Unix seconds: when models.yaml last changed (OpenAI's `created`). */
  created: number;
};
