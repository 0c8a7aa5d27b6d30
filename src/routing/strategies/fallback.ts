import { indexedStrategy, type Exclusion } from "../strategy";

/**
 * When earlier strategies left nothing: every model that still meets the HARD
 * requirements (availability, modality, explicit capabilities, context window),
 * cheapest first. Only soft requirements (agent tags) are relaxed.
 */
export const FallbackStrategy = indexedStrategy("fallback", (candidates, ctx) => {
  if (candidates.length > 0) return { kept: candidates, excluded: [], note: "not needed" };
  const kept: number[] = [];
  const excluded: Exclusion[] = [];
  for (const p of ctx.index.costOrder) {
    const why = ctx.hardFailureAt(p);
    if (why === null) kept.push(p);
    else excluded.push({ model: ctx.index.names[p]!, reason: why });
  }
  return { kept, excluded, note: "relaxed soft requirements; hard ones still apply" };
});
