import { BACKGROUND_SENTENCES } from "./background-sentences";
import type { Embedder, TurnEmbedder } from "./embedder";

/** Vectors one isolate keeps per remote embedder (the newest texts: queries, and rows about to be written). */
const KEEP = 4096;

/**
 * A remote embedder as the thread object's dense channel needs it: synchronous, from vectors
 * fetched ahead (`load`, awaited before the recall or the write that reads them). A text not
 * loaded has no vector (undefined): its row stays missing and a recall leaves it to full-text.
 */
export class EmbedCache implements TurnEmbedder {
  readonly id: string;
  readonly dims: number;
  readonly remote = true;
  readonly #vectors = new Map<string, Float32Array>();
  /** BACKGROUND_SENTENCES' vectors, once loaded (kept apart from the texts: never pushed out). */
  #background: Float32Array[] | undefined;

  constructor(readonly embedder: Embedder) {
    this.id = embedder.id;
    this.dims = embedder.dims;
  }

  /** What `tokens` of its embedding cost (USD). */
  cost(tokens: number): number {
    return (tokens / 1000) * this.embedder.costPer1k;
  }

  embed(text: string): Float32Array | undefined {
    return text.trim() === "" ? new Float32Array(this.dims) : this.#vectors.get(text);
  }

  /** The embedder's background (background-sentences.ts, for a small set: vectors.ts nearest); undefined until a load brought it. */
  background(): readonly Float32Array[] | undefined {
    return this.#background;
  }

  /**
   * Embeds the texts not held yet (one call); the tokens that cost (0: all held). `withBackground`: the background too, in
   * the same call, when it is not held yet (once per isolate). Throws EmbedFailure.
   */
  async load(texts: readonly string[], withBackground = false): Promise<number> {
    const wanted = [...new Set(texts)].filter((t) => this.embed(t) === undefined);
    const extra = withBackground && !this.#background ? BACKGROUND_SENTENCES : [];
    if (wanted.length === 0 && extra.length === 0) return 0;
    const { vectors, tokens } = await this.embedder.embed([...wanted, ...extra]);
    if (extra.length > 0) this.#background = vectors.slice(wanted.length);
    for (const [i, t] of wanted.entries()) {
      this.#vectors.delete(t);
      this.#vectors.set(t, vectors[i]!);
    }
    // Oldest out first (a Map iterates in insertion order).
    for (const t of this.#vectors.keys()) {
      if (this.#vectors.size <= KEEP) break;
      this.#vectors.delete(t);
    }
    return tokens;
  }
}
