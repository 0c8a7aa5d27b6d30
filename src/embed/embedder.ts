import { isAppError } from "../core/errors";
import { log } from "../core/log";

/**
 * The one interface every embedder has (docs/concepts/recall-by-meaning.md): texts in, unit vectors of `dims` out, in
 * order, with the tokens they cost. `id` is what stored vectors record: vectors of two ids are
 * never compared.
 */
export type Embedding = { vectors: Float32Array[]; tokens: number };

export interface Embedder {
  /** Its models.yaml name ("embedded" for the built-in one): usage is counted under it. */
  readonly name: string;
  readonly id: string;
  readonly dims: number;
  /** USD per 1,000 input tokens (0: the built-in one). */
  readonly costPer1k: number;
  /** Throws EmbedFailure, never anything else. */
  embed(texts: readonly string[]): Promise<Embedding>;
}

/**
 * A text embedder the object can call inside its own work: the embedded table (microseconds; undefined until it
 * is read), or a `remote` one's vectors fetched ahead (src/embed/embed-cache.ts; undefined for a text not fetched),
 * whose missing vectors are filled only by the object's background work, never before a recall.
 */
export type TurnEmbedder = { readonly id: string; readonly dims: number; readonly remote?: boolean; embed(text: string): Float32Array | undefined };

/** Why an embedding did not come: the caller recalls by words alone and says so. */
export type EmbedFailureReason = "failed" | "timeout" | "dimension" | "unavailable";

export class EmbedFailure extends Error {
  constructor(
    readonly embedder: string,
    readonly reason: EmbedFailureReason,
    detail: string,
  ) {
    super(`embedder ${embedder}: ${detail}`);
  }
}

/** The warning a reply carries when its recall ran without the dense channel. */
export const denseOffWarning = (e: EmbedFailure): string =>
  `recall by meaning was off for this turn (embedder ${e.embedder}: ${e.reason === "dimension" ? "wrong vector length" : e.reason}); it ran on full-text search`;

/**
 * An embedder's failure or a budget's refusal (BEM-230) of `embedder`'s call, logged, as the warning of a recall that
 * ran on words; undefined for any other error (the caller rethrows it).
 */
export function unembeddedWarning(embedder: string, e: unknown): string | undefined {
  if (e instanceof EmbedFailure) {
    log.warn("embedder", { embedder: e.embedder, reason: e.reason, message: e.message });
    return denseOffWarning(e);
  }
  if (isAppError(e) && e.code === "BEM-230") {
    log.warn("embedder", { embedder, reason: "budget", message: e.message });
    return `recall by meaning was off for this turn (embedder ${embedder}: ${e.message}); it ran on full-text search`;
  }
  return undefined;
}

/** `v` scaled to unit length (all zeros stays zeros). */
export function unit(v: readonly number[]): Float32Array {
  const out = Float32Array.from(v);
  let n = 0;
  for (const x of out) n += x * x;
  if (n > 0) {
    const inv = 1 / Math.sqrt(n);
    for (let d = 0; d < out.length; d++) out[d] = out[d]! * inv;
  }
  return out;
}

/** Vectors as an embedder answered them, checked: one per text, each of `dims` finite numbers. */
export function checkedVectors(name: string, dims: number, count: number, vectors: readonly (readonly number[])[]): Float32Array[] {
  if (vectors.length !== count) throw new EmbedFailure(name, "failed", `answered ${vectors.length} vectors for ${count} texts`);
  for (const v of vectors) {
    if (v.length !== dims) throw new EmbedFailure(name, "dimension", `answered a vector of ${v.length} dimensions, not ${dims}`);
    if (!v.every(Number.isFinite)) throw new EmbedFailure(name, "failed", "answered a vector with a non-number");
  }
  return vectors.map(unit);
}

/** `work`, or an EmbedFailure "timeout" after `ms` (and any other error as "failed"). */
export async function within<T>(name: string, ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(new EmbedFailure(name, "timeout", `no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work(abort.signal), late]);
  } catch (e) {
    if (e instanceof EmbedFailure) throw e;
    throw new EmbedFailure(name, "failed", e instanceof Error ? e.message : String(e));
  } finally {
    clearTimeout(timer);
  }
}
