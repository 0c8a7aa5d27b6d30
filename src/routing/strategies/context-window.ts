import { indexedStrategy, type Exclusion } from "../strategy";

/** HARD: drops models whose max_tokens cannot hold the request's minimum context; runs before cost sorting. */
export const ContextWindowStrategy = indexedStrategy("context_window", (candidates, ctx) => {
  const need = ctx.requirements.minContextTokens;
  const max = ctx.index.maxTokens;
  let kept: number[] | null = null;
  const excluded: Exclusion[] = [];
  const reasons = new Map<number, string>(); // one string per distinct window size

  for (let i = 0; i < candidates.length; i++) {
    const p = candidates[i]!;
    if (max[p]! >= need) kept?.push(p);
    else {
      kept ??= candidates.slice(0, i) as number[];
      let reason = reasons.get(max[p]!);
      if (reason === undefined) reasons.set(max[p]!, (reason = `context window ${max[p]} < ${need} tokens needed`));
      excluded.push({ model: ctx.index.names[p]!, reason });
    }
  }
  return { kept: kept ?? candidates, excluded, note: `needs ${need} tokens` };
});
