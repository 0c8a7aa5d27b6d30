import { byCost, type RoutingStrategy } from "../strategy";

/** Cheapest first, ties by config order. */
export const CostAwareStrategy: RoutingStrategy = {
  name: "cost_aware",
  apply: (candidates) => ({ kept: byCost(candidates), excluded: [] }),
};
