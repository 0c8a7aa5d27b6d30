import { z } from "@hono/zod-openapi";

/** The channel a run keeps its routing summary, the scopes it loaded and this report in (src/pipeline/save-turn.ts). */
export const LAST_ROUTE = "last_route";

/** A recalled turn's or ranked fact's place in each channel that found it (src/embed/fusion.ts). */
export const RankChannels = z
  .object({
    full_text: z.object({ rank: z.number().int(), score: z.number() }).openapi({ description: "Its rank by words (1 = best) and BM25 score" }),
    dense: z.object({ rank: z.number().int(), score: z.number() }).openapi({ description: "Its rank by meaning (1 = best) and cosine similarity" }),
  })
  .partial()
  .openapi("RankChannels", { description: "Where each channel ranked it; the item's `score` is their fusion" });

/** One fact a load considered: loaded (and why) or left out. */
export const FactReport = z
  .object({
    id: z.string(),
    scope: z.string(),
    kind: z.string(),
    key: z.string().nullable(),
    tokens: z.number().int(),
    loaded: z.boolean(),
    reason: z.enum(["fits", "always", "relevant", "recent", "didn't fit"]).openapi({
      description:
        '"fits": its whole scope fit the facts share; "always": a kind the agent always loads; "relevant": matched the input (BM25 `score`, higher is closer); "recent": newest after those; "didn\'t fit": examined, left out',
    }),
    score: z.number().optional(),
    channels: RankChannels.optional(),
  })
  .openapi("FactReport");
export type FactReport = z.infer<typeof FactReport>;

/** One earlier turn recall put before the recent window (ids only: a stored report never holds text). */
export const RecallReport = z
  .object({
    id: z.string().openapi({ description: "The message's id in the thread" }),
    tokens: z.number().int(),
    reason: z.enum(["match", "neighbour"]).openapi({
      description:
        '"match": its words matched the input (BM25 `score`, with a share of its neighbours\'); "neighbour": brought along next to a match (the `score` of that match)',
    }),
    score: z.number(),
    channels: RankChannels.optional(),
  })
  .openapi("RecallReport");
export type RecallReport = z.infer<typeof RecallReport>;

/** The `memory` part of a run's response: which facts the model was given, and why; and which earlier turns recall brought. */
export const MemoryReport = z
  .object({
    facts: z.array(FactReport),
    dropped_facts: z.number().int().openapi({ description: "Facts left out because the facts share was full" }),
    facts_hidden: z
      .number()
      .int()
      .optional()
      .openapi({ description: "Read back later (thread state, history, a stored response): entries of scopes the reading key cannot read, left out" }),
    recalled: z.array(RecallReport).optional().openapi({ description: "Earlier turns recalled for the input, oldest first (absent: none)" }),
  })
  .openapi("MemoryReport");
export type MemoryReport = z.infer<typeof MemoryReport>;
