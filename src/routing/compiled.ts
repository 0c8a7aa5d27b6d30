import type { AgentConfig, ModelConfig } from "./model-config";

/** The shape of src/routing/models.generated.ts. */
export type CompiledModels = {
  models: ModelConfig[];
  defaultModel: string | null;
  agents: AgentConfig[];
  /** Unix seconds: when models.yaml last changed (OpenAI's `created`). */
  created: number;
};
