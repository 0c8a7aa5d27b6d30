/**
 * The routing rules written the obvious way (filter, filter, stable sort) with
 * no indexes. Property tests check ModelRouter against it; the benchmark uses
 * it as the baseline.
 */
import type { ModelConfig, Modality } from "../../src/config/model-config";

export type ReferenceRequest = {
  modalities: Modality[];
  capabilities: string[];
  hard: boolean;
  minTokens: number;
};

export function referenceRoute(
  models: readonly ModelConfig[],
  req: ReferenceRequest,
  available: (m: ModelConfig) => boolean,
  defaultModel: string | null,
): string[] {
  const hasAll = (m: ModelConfig) => req.modalities.every((x) => m.modalities.includes(x));
  const hasCaps = (m: ModelConfig) => req.capabilities.every((c) => m.capabilities.includes(c));
  const fits = (m: ModelConfig) => m.max_tokens >= req.minTokens;
  const hardOk = (m: ModelConfig) => available(m) && hasAll(m) && (!req.hard || hasCaps(m)) && fits(m);
  const byCost = (list: ModelConfig[]) => [...list].sort((a, b) => a.cost_per_1k_tokens - b.cost_per_1k_tokens);

  let c = models.filter(available).filter(hasAll).filter(hasCaps).filter(fits);
  c = byCost(c);
  if (c.length === 0) c = byCost(models.filter(hardOk));
  if (c.length === 0) {
    const d = models.find((m) => m.name === defaultModel);
    if (d && hardOk(d)) c = [d];
  }
  return c.map((m) => m.name);
}
