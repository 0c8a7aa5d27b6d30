import { byCost, filterWith, type RoutingStrategy } from "../strategy";

/**
 * When earlier strategies left nothing: every model that still meets the HARD
 * requirements (availability, modality, explicit capabilities, context window),
 * cheapest first. Only soft requirements (agent tags) are relaxed.
 */
export const FallbackStrategy: RoutingStrategy = {
  name: "fallback",
  apply(candidates, ctx) {
    if (candidates.length > 0) return { kept: [...candidates], excluded: [], note: "not needed" };
    return { ...filterWith(byCost(ctx.models), (m) => ctx.hardFailure(m)), note: "relaxed soft requirements; hard ones still apply" };
  },
};
