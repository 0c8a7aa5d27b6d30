import { filterWith, tooSmall, type RoutingStrategy } from "../strategy";

/** HARD: drops models whose max_tokens cannot hold the request's minimum context; runs before cost sorting. */
export const ContextWindowStrategy: RoutingStrategy = {
  name: "context_window",
  apply: (candidates, ctx) => ({ ...filterWith(candidates, (m) => tooSmall(m, ctx.requirements)), note: `needs ${ctx.requirements.minContextTokens} tokens` }),
};
