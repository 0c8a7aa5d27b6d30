import { bitsetOf, hasBit } from "../bitset";
import { indexedStrategy } from "../strategy";

/**
 * Cheapest first, ties by config order: walks the cost order computed once at
 * build time and keeps the candidates (O(n), no per-request sort).
 */
export const CostAwareStrategy = indexedStrategy("cost_aware", (candidates, ctx) => {
  const idx = ctx.index;
  const member = bitsetOf(idx.size, candidates);
  const kept: number[] = [];
  const order = idx.costOrder;
  for (let i = 0; i < order.length && kept.length < candidates.length; i++) {
    const p = order[i]!;
    if (hasBit(member, p)) kept.push(p);
  }
  return { kept, excluded: [] };
});
