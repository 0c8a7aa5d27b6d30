import type { ModelConfig } from "./model-config";
import type { ModelIndex } from "./model-index";
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
  readonly index: ModelIndex;
  /** null when the model meets every hard requirement (availability, modality, explicit capabilities, context window), else why not. */
  hardFailure(model: ModelConfig): string | null;
  hardFailureAt(position: number): string | null;
}

/** A routing step: narrows and/or reorders the candidates. Names must be unique in a router. */
export interface RoutingStrategy {
  readonly name: string;
  apply(candidates: readonly ModelConfig[], ctx: RouteContext): StrategyResult;
}

export type IndexedResult = { kept: readonly number[]; excluded: Exclusion[]; note?: string };

/** Built-in strategies work on model positions against the index; the router uses this path when present. */
export interface IndexedStrategy extends RoutingStrategy {
  applyIndexed(candidates: readonly number[], ctx: RouteContext): IndexedResult;
}

export const isIndexed = (s: RoutingStrategy): s is IndexedStrategy =>
  typeof (s as Partial<IndexedStrategy>).applyIndexed === "function";

/** Makes a position-based strategy usable through the plain `apply` interface too. */
export function indexedStrategy(
  name: string,
  applyIndexed: (candidates: readonly number[], ctx: RouteContext) => IndexedResult,
): IndexedStrategy {
  return {
    name,
    applyIndexed,
    apply(candidates, ctx) {
      const positions = candidates.map((m) => {
        const p = ctx.index.byName.get(m.name);
        if (p === undefined) throw new Error(`strategy ${name}: candidate ${m.name} is not in the router's model list`);
        return p;
      });
      const r = applyIndexed(positions, ctx);
      return { kept: r.kept.map((p) => ctx.models[p]!), excluded: r.excluded, note: r.note };
    },
  };
}

/**
 * Keeps candidates whose bit is set; `why` explains each exclusion. Returns the
 * input array itself when nothing is excluded, so the trace can share it.
 */
export function filterByBits(
  candidates: readonly number[],
  bits: Uint32Array,
  ctx: RouteContext,
  why: (p: number) => string,
): IndexedResult {
  let kept: number[] | null = null;
  const out: number[] = [];
  for (let i = 0; i < candidates.length; i++) {
    const p = candidates[i]!;
    if (((bits[p >>> 5]! >>> (p & 31)) & 1) === 1) {
      kept?.push(p);
    } else {
      kept ??= candidates.slice(0, i) as number[];
      out.push(p);
    }
  }
  // The reasons are built when first read (a trace that is shown, an error that explains).
  let excluded: Exclusion[] | undefined;
  const result = { kept: kept ?? candidates } as IndexedResult;
  Object.defineProperty(result, "excluded", {
    enumerable: true,
    get: () => (excluded ??= out.map((p) => ({ model: ctx.index.names[p]!, reason: why(p) }))),
  });
  return result;
}
