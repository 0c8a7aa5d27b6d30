import { ESTIMATE_MARGIN, estimateTextTokens } from "../core/tokens";
import { BACKGROUND_SENTENCES } from "./background-sentences";
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
  /** BACKGROUND_SENTENCES' vectors, once loaded (kept apart from the texts: never pushed out). */
  #background: Float32Array[] | undefined;

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

  /** The embedder's background (background-sentences.ts, for a small set: vectors.ts nearest); undefined until a load brought it. */
  background(): readonly Float32Array[] | undefined {
    return this.#background;
  }

  /** What `load` would send: the texts not held yet, and the background when asked for and not held yet. */
  #toSend(texts: readonly string[], withBackground: boolean): { wanted: string[]; extra: readonly string[] } {
    return { wanted: this.missing(texts), extra: withBackground && !this.#background ? BACKGROUND_SENTENCES : [] };
  }

  /**
   * `load`, held against `holder`'s budgets when there is one: reserved for the most what it sends can cost
   * (its tokens, with the estimate's margin, rounded up so a priced call always holds something and a
   * spent budget refuses it), settled to what the call's usage bills (0 if it failed). A refusal throws BEM-230 before
   * anything goes out.
   */
  async loadHeld(texts: readonly string[], holder: EmbedHolder | undefined, withBackground = false): Promise<number> {
    const { wanted, extra } = this.#toSend(texts, withBackground);
    if (wanted.length === 0 && extra.length === 0) return 0;
    const tokens = [...wanted, ...extra].reduce((n, t) => n + estimateTextTokens(t.slice(0, MAX_CHARS)), 0);
    const hold = await holder?.hold(Math.ceil(tokens * ESTIMATE_MARGIN * this.embedder.costPer1k * 1000));
    let spent = 0;
    try {
      spent = await this.load(wanted, withBackground);
    } finally {
      hold?.settle(this.micro(spent));
    }
    return spent;
  }

  /**
   * Embeds the texts not held yet (one call); the tokens that cost (0: all held). `withBackground`: the background too, in
   * the same call, when it is not held yet (once per isolate). Throws EmbedFailure.
   */
  async load(texts: readonly string[], withBackground = false): Promise<number> {
    const { wanted, extra } = this.#toSend(texts, withBackground);
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
