import type { EmbedderConfig } from "../config/embedder-config";
import { estimateTextTokens } from "../core/tokens";
import { checkedVectors, type Embedder, type Embedding, within } from "./embedder";

/** Characters of one text sent at most (100 KB of text is still one bounded request; models read a few hundred tokens). */
export const MAX_CHARS = 8192;

/** One call to the far side: the texts (each non-empty) in, raw vectors and, when it says, the tokens they cost. */
export type EmbedCall = (texts: string[], signal: AbortSignal) => Promise<{ vectors: number[][]; tokens?: number }>;

/**
 * A remote embedder around one call: blank texts are the zero vector without a request (endpoints
 * refuse empty input), long ones are cut, and the answer is checked (count, length, numbers) and
 * made unit length. Tokens are the endpoint's count, or estimated when it gives none (Workers AI).
 */
export function remoteEmbedder(config: EmbedderConfig, call: EmbedCall): Embedder {
  const { name, dims, model, provider } = config;
  return {
    name,
    id: `${provider}:${model}:${dims}`,
    dims,
    costPer1k: config.cost_per_1k_tokens,
    async embed(texts: readonly string[]): Promise<Embedding> {
      const sent = texts.flatMap((t, i) => (t.trim() === "" ? [] : [{ i, text: t.slice(0, MAX_CHARS) }]));
      const vectors: Float32Array[] = texts.map(() => new Float32Array(dims));
      if (sent.length === 0) return { vectors, tokens: 0 };
      const answer = await within(name, config.timeout_ms, (signal) =>
        call(
          sent.map((s) => s.text),
          signal,
        ),
      );
      const got = checkedVectors(name, dims, sent.length, answer.vectors);
      for (const [k, s] of sent.entries()) vectors[s.i] = got[k]!;
      return { vectors, tokens: answer.tokens ?? sent.reduce((n, s) => n + estimateTextTokens(s.text), 0) };
    },
  };
}
