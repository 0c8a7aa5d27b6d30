/** Fixed-size bitsets over model positions: membership tests and intersections in a few word operations. */
export type Bitset = Uint32Array;

export const bitsetWords = (size: number): number => (size + 31) >>> 5;

export function bitsetOf(size: number, positions: Iterable<number>): Bitset {
  const bits = new Uint32Array(bitsetWords(size));
  for (const p of positions) bits[p >>> 5]! |= 1 << (p & 31);
  return bits;
}

export const hasBit = (bits: Bitset, p: number): boolean => ((bits[p >>> 5]! >>> (p & 31)) & 1) === 1;

/** a ∧ b as a new bitset. */
export function intersect(a: Bitset, b: Bitset): Bitset {
  const out = new Uint32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! & b[i]!;
  return out;
}
