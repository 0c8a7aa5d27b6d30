/**
 * The embedded embedder's word vectors (docs/concepts/recall-by-meaning.md): a static table of the most frequent
 * English words' GloVe vectors (built by scripts/build-word-vectors.ts, served through the ASSETS
 * binding, decoded once per isolate), and a text's vector as their weighted mean.
 *
 * File layout (little-endian): "EWV1", dims u32, count u32, the words' UTF-8 length u32, the
 * words joined by "\n" in frequency order, zero padding to 4 bytes, one f32 scale per word,
 * then count × dims int8 (a row is scale × its int8s).
 */

/** Bumped whenever the table or the weighting changes: vectors record it, and vectors of two ids are never compared. */
export const WORD_TABLE_ID = "glove100-50k-sif-v1";
export const WORD_TABLE_FILE = "embed/words-v1.bin";
export const WORD_TABLE_DIMS = 100;

const MAGIC = 0x31565745; // "EWV1"

export type WordTable = { dims: number; index: Map<string, number>; scales: Float32Array; rows: Int8Array };

const pad4 = (n: number) => (n + 3) & ~3;

export function encodeWordTable(words: readonly string[], vectors: readonly Float32Array[], dims: number): Uint8Array {
  const text = new TextEncoder().encode(words.join("\n"));
  const head = 16;
  const scalesAt = pad4(head + text.length);
  const rowsAt = scalesAt + 4 * words.length;
  const out = new Uint8Array(rowsAt + words.length * dims);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, dims, true);
  view.setUint32(8, words.length, true);
  view.setUint32(12, text.length, true);
  out.set(text, head);
  for (const [i, v] of vectors.entries()) {
    let max = 0;
    for (let d = 0; d < dims; d++) max = Math.max(max, Math.abs(v[d]!));
    const scale = max / 127 || 1;
    view.setFloat32(scalesAt + 4 * i, scale, true);
    for (let d = 0; d < dims; d++) view.setInt8(rowsAt + i * dims + d, Math.round(v[d]! / scale));
  }
  return out;
}

export function decodeWordTable(buf: ArrayBuffer): WordTable {
  const view = new DataView(buf);
  if (buf.byteLength < 16 || view.getUint32(0, true) !== MAGIC) throw new Error("not a word-vector table");
  const dims = view.getUint32(4, true);
  if (dims !== WORD_TABLE_DIMS) throw new Error(`word-vector table of ${dims} dimensions, not ${WORD_TABLE_DIMS}`);
  const count = view.getUint32(8, true);
  const textLength = view.getUint32(12, true);
  const words = new TextDecoder().decode(new Uint8Array(buf, 16, textLength)).split("\n");
  const scalesAt = pad4(16 + textLength);
  const rowsAt = scalesAt + 4 * count;
  if (words.length !== count || buf.byteLength !== rowsAt + count * dims) throw new Error("word-vector table truncated");
  const index = new Map<string, number>();
  for (const [i, w] of words.entries()) index.set(w, i);
  // The scales are copied out: their offset need not be 4-aligned in a caller's buffer (a Node Buffer's slice).
  const scales = new Float32Array(count);
  for (let i = 0; i < count; i++) scales[i] = view.getFloat32(scalesAt + 4 * i, true);
  return { dims, index, scales, rows: new Int8Array(buf, rowsAt, count * dims) };
}

/** Lower-cased words of a text, as the table spells them (letters and digits; "don't" is "don" and "t", both weighed as frequent). */
export const tableWords = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * SIF's weight a / (a + p(w)) (Arora et al., 2017) with p(w) from the word's frequency rank by
 * Zipf's law over GloVe's 400,000 words: the most frequent words count for little, rare ones fully.
 */
const SIF_A = 1e-3;
const ZIPF_NORM = Math.log(400_000) + 0.5772;
const sifWeight = (rank: number): number => SIF_A / (SIF_A + 1 / ((rank + 1) * ZIPF_NORM));

/** At most this many words of one text are read (100 KB of text is still one vector, in bounded time). */
const MAX_WORDS = 4096;

/** A text's vector: the SIF-weighted mean of its known words' vectors, unit length; all zeros when it has none. */
export function embedWords(table: WordTable, text: string, out: Float32Array = new Float32Array(table.dims)): Float32Array {
  out.fill(0);
  const { dims, index, scales, rows } = table;
  const words = tableWords(text.length > 64 * MAX_WORDS ? text.slice(0, 64 * MAX_WORDS) : text);
  let n = 0;
  for (const w of words) {
    if (n++ >= MAX_WORDS) break;
    const i = index.get(w);
    if (i === undefined) continue;
    const k = sifWeight(i) * scales[i]!;
    const at = i * dims;
    for (let d = 0; d < dims; d++) out[d] = out[d]! + k * rows[at + d]!;
  }
  let norm = 0;
  for (let d = 0; d < dims; d++) norm += out[d]! * out[d]!;
  if (norm > 0) {
    const inv = 1 / Math.sqrt(norm);
    for (let d = 0; d < dims; d++) out[d] = out[d]! * inv;
  }
  return out;
}

/** Texts of the background (backgroundVectors), and words in each. */
export const BACKGROUND_TEXTS = 256;
const BACKGROUND_WORDS = 12;
const background = new WeakMap<WordTable, Float32Array[]>();

/**
 * The embedder's own random English: BACKGROUND_TEXTS texts of words drawn by the table's Zipf frequencies (a fixed
 * seed, so every isolate draws the same), embedded like every other text. A set too small to rank against itself (a scope of
 * one fact) is ranked against these (vectors.ts nearest): its common direction and its floor come from them.
 */
export function backgroundVectors(table: WordTable): Float32Array[] {
  let out = background.get(table);
  if (out) return out;
  const words = [...table.index.keys()];
  let seed = 1;
  // A linear congruential generator: deterministic, and good enough to draw words.
  const draw = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  // Zipf's inverse CDF over the table's ranks (p(rank) ∝ 1 / (rank + 1)).
  const word = () => words[Math.min(words.length - 1, Math.floor(Math.exp(draw() * Math.log(words.length + 1)) - 1))]!;
  out = Array.from({ length: BACKGROUND_TEXTS }, () => embedWords(table, Array.from({ length: BACKGROUND_WORDS }, word).join(" ")));
  background.set(table, out);
  return out;
}
