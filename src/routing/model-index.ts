import { AppError } from "../errors";
import { type Bitset, bitsetOf, intersect } from "./bitset";
import { buildIndexData, type ModelIndexData } from "./compiled";
import type { Modality, ModelConfig } from "./model-config";

export const MODALITY_BIT: Record<Modality, number> = { text: 1, image: 2, audio: 4, video: 8 };
export const MODALITIES = Object.keys(MODALITY_BIT) as Modality[];

/**
 * Everything the router asks per request, precomputed once per model list:
 * name -> position, a bitset per modality combination and per capability,
 * the global cost order, context limits.
 */
export class ModelIndex {
  readonly size: number;
  readonly names: readonly string[];
  readonly byName: ReadonlyMap<string, number>;
  /** Positions 0..n-1 in config order. */
  readonly all: readonly number[];
  readonly costOrder: Int32Array;
  readonly maxTokens: Float64Array;
  /** Per model: MODALITY_BIT flags it supports. */
  readonly modalityMask: Uint8Array;
  private readonly capabilities: Map<string, Bitset>;
  private readonly modalityCombos: Bitset[];

  constructor(readonly models: readonly ModelConfig[], data?: ModelIndexData) {
    const n = models.length;
    this.size = n;
    const byName = new Map<string, number>();
    models.forEach((m, i) => {
      const seen = byName.get(m.name);
      if (seen !== undefined) throw new AppError("BEM-042", `duplicate model name "${m.name}" (positions ${seen} and ${i})`);
      byName.set(m.name, i);
    });
    this.byName = byName;
    this.names = Object.freeze(models.map((m) => m.name)); // shared by traces: read-only
    this.all = models.map((_, i) => i);
    const d = data && data.costOrder.length === n ? data : buildIndexData(models);
    this.costOrder = Int32Array.from(d.costOrder);
    this.maxTokens = Float64Array.from(models, (m) => m.max_tokens);
    this.modalityMask = Uint8Array.from(models, (m) => m.modalities.reduce((acc, x) => acc | MODALITY_BIT[x], 0));
    this.capabilities = new Map(Object.entries(d.byCapability).map(([cap, ps]) => [cap, bitsetOf(n, ps)]));

    // All 16 modality combinations: a request's modality need is one table lookup.
    const single = MODALITIES.map((mod) => bitsetOf(n, d.byModality[mod] ?? []));
    this.modalityCombos = [];
    for (let mask = 0; mask < 16; mask++) {
      let bits = bitsetOf(n, this.all);
      MODALITIES.forEach((_, b) => {
        if (mask & (1 << b)) bits = intersect(bits, single[b]!);
      });
      this.modalityCombos.push(bits);
    }
  }

  /** Models supporting every modality in `mask` (MODALITY_BIT flags). */
  modalityBits(mask: number): Bitset {
    return this.modalityCombos[mask & 15]!;
  }

  /** Models listing `cap`; undefined when none does. */
  capabilityBits(cap: string): Bitset | undefined {
    return this.capabilities.get(cap);
  }

  hasCapability(cap: string): boolean {
    return this.capabilities.has(cap);
  }
}
