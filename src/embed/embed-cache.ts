import { ESTIMATE_MARGIN, estimateTextTokens } from "../core/tokens";
import type { Embedder, TurnEmbedder } from "./embedder";
import { MAX_CHARS } from "./remote";

/** One call's reservation against budgets: settled once, to what it really cost in micro-USD (0 if it failed). */
export type EmbedHold = { settle(micro: number): void };
/** What holds a priced call against budgets (a run's spend guard, src/pipeline/spend-guard.ts): a refusal throws BEM-230. */
export type EmbedHolder = { hold(micro: number): Promise<EmbedHold> };

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

  constructor(readonly embedder: Embedder) {
    this.id = embedder.id;
    this.dims = embedder.dims;
  }

  /** What `tokens` of its embedding cost, in whole micro-USD (rounded as a model call's cost is, so a budget settles to the usage row). */
  micro(tokens: number): number {
    return Math.round(tokens * this.embedder.costPer1k * 1000);
  }

  /** What `tokens` of its embedding cost (USD). */
  cost(tokens: number): number {
    return this.micro(tokens) / 1_000_000;
  }

  /** The texts not held yet: what `load` would send. */
  missing(texts: readonly string[]): string[] {
    return [...new Set(texts)].filter((t) => this.embed(t) === undefined);
  }

  embed(text: string): Float32Array | undefined {
    return text.trim() === "" ? new Float32Array(this.dims) : this.#vectors.get(text);
  }

  /**
   * `load`, held against `holder`'s budgets when there is one: reserved for the most the texts not held yet can cost
   * (their tokens as sent, with the estimate's margin, rounded up so a priced call always holds something and a
   * spent budget refuses it), settled to what the call's usage bills (0 if it failed). A refusal throws BEM-230 before
   * anything goes out.
   */
  async loadHeld(texts: readonly string[], holder: EmbedHolder | undefined): Promise<number> {
    const wanted = this.missing(texts);
    if (wanted.length === 0) return 0;
    const tokens = wanted.reduce((n, t) => n + estimateTextTokens(t.slice(0, MAX_CHARS)), 0);
    const hold = await holder?.hold(Math.ceil(tokens * ESTIMATE_MARGIN * this.embedder.costPer1k * 1000));
    let spent = 0;
    try {
      spent = await this.load(wanted);
    } finally {
      hold?.settle(this.micro(spent));
    }
    return spent;
  }

  /** Embeds the texts not held yet (one call); the tokens that cost (0: all held). Throws EmbedFailure. */
  async load(texts: readonly string[]): Promise<number> {
    const wanted = this.missing(texts);
    if (wanted.length === 0) return 0;
    const { vectors, tokens } = await this.embedder.embed(wanted);
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
