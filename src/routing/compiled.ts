import type { AgentConfig, Modality, ModelConfig } from "./model-config";

/**
 * Indexes computed once from the model list (at build time for models.yaml):
 * positions into `models`, so a request only intersects small sets.
 */
export type ModelIndexData = {
  /** Positions ordered by cost_per_1k_tokens, ties by config order. */
  costOrder: number[];
  byModality: Partial<Record<Modality, number[]>>;
  byCapability: Record<string, number[]>;
};

/** The shape of src/routing/models.generated.ts. */
export type CompiledModels = {
  models: ModelConfig[];
  defaultModel: string | null;
  agents: AgentConfig[];
  index: ModelIndexData;
  /** Unix seconds: when models.yaml last changed (OpenAI's `created`). */
  created: number;
};

export function buildIndexData(models: readonly ModelConfig[]): ModelIndexData {
  const costOrder = models.map((_, i) => i);
  // Array.prototype.sort is stable, so equal costs keep config order.
  costOrder.sort((a, b) => models[a]!.cost_per_1k_tokens - models[b]!.cost_per_1k_tokens);
  const byModality: Partial<Record<Modality, number[]>> = {};
  // Null prototype: a capability named "constructor" must not hit Object.prototype.
  const byCapability: Record<string, number[]> = Object.create(null) as Record<string, number[]>;
  models.forEach((m, i) => {
    for (const mod of new Set(m.modalities)) (byModality[mod] ??= []).push(i);
    for (const cap of new Set(m.capabilities)) (byCapability[cap] ??= []).push(i);
  });
  return { costOrder, byModality, byCapability };
}
