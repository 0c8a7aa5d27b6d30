import type { ModelConfig } from "./model-config";
import type { Requirements, RouteRequest } from "./requirements";

export type Exclusion = { model: string; reason: string };

export type StrategyResult = {
  /** Remaining candidates, in preference order. */
  kept: ModelConfig[];
  excluded: Exclusion[];
  note?: string;
};

/** What a strategy may consult besides its candidates. */
export interface RouteContext {
  readonly request: RouteRequest;
  readonly requirements: Requirements;
  /** Every configured model, in config order. */
  readonly models: readonly ModelConfig[];
  /** null when the model meets every hard requirement (availability, modality, explicit capabilities, context window), else why not. */
  hardFailure(model: ModelConfig): string | null;
}

/** A routing step: narrows and/or reorders the candidates. Names must be unique in a router. */
export interface RoutingStrategy {
  readonly name: string;
  apply(candidates: readonly ModelConfig[], ctx: RouteContext): StrategyResult;
}

/** Keeps the candidates `why` has no objection to; the others are excluded with its reason. */
export function filterWith(candidates: readonly ModelConfig[], why: (m: ModelConfig) => string | null): Pick<StrategyResult, "kept" | "excluded"> {
  const kept: ModelConfig[] = [];
  const excluded: Exclusion[] = [];
  for (const m of candidates) {
    const reason = why(m);
    if (reason === null) kept.push(m);
    else excluded.push({ model: m.name, reason });
  }
  return { kept, excluded };
}

/** Cheapest first; equal costs keep their order (Array.prototype.sort is stable). */
export const byCost = (models: readonly ModelConfig[]): ModelConfig[] => [...models].sort((a, b) => a.cost_per_1k_tokens - b.cost_per_1k_tokens);

/** Why `model` cannot take every modality of the request, or null. */
export function missingModalities(model: ModelConfig, req: Requirements): string | null {
  const missing = req.modalities.filter((x) => !model.modalities.includes(x));
  return missing.length === 0 ? null : `lacks ${missing.join(", ")} input`;
}

/** Why `model` lacks some requested capability, or null. */
export function missingCapabilities(model: ModelConfig, req: Requirements, suffix = ""): string | null {
  const missing = req.capabilities.filter((c) => !model.capabilities.includes(c));
  return missing.length === 0 ? null : `lacks capability ${missing.join(", ")}${suffix}`;
}

/** Why `model`'s context window cannot hold the request, or null. */
export function tooSmall(model: ModelConfig, req: Requirements): string | null {
  return model.max_tokens >= req.minContextTokens ? null : `context window ${model.max_tokens} < ${req.minContextTokens} tokens needed`;
}
