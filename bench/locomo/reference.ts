// The two references the LoCoMo bench sets beside edgeweave, over the same units and budget:
// the newest units that fit, and a plain Okapi BM25 (k1 1.2, b 0.75; lower-cased letter/digit
// words, a short stopword list), best first, each unit that fits.

const STOP = new Set(
  "a an and are as at be but by did do does for from had has have he her his how i in is it of on or she that the their they this to was were what when where which who why will with you".split(
    " ",
  ),
);

export const words = (text: string): string[] => (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !STOP.has(w));

export type Unit = { id: string; text: string; tokens: number };

export class Bm25 {
  private readonly tf: Map<string, number>[];
  private readonly len: number[];
  private readonly df = new Map<string, number>();
  private readonly avg: number;

  constructor(private readonly units: readonly Unit[]) {
    this.tf = units.map((u) => {
      const m = new Map<string, number>();
      for (const w of words(u.text)) m.set(w, (m.get(w) ?? 0) + 1);
      for (const w of m.keys()) this.df.set(w, (this.df.get(w) ?? 0) + 1);
      return m;
    });
    this.len = this.tf.map((m) => [...m.values()].reduce((a, b) => a + b, 0));
    this.avg = this.len.reduce((a, b) => a + b, 0) / Math.max(1, units.length);
  }

  /** Units with a positive score, best first (ties: earlier unit first). */
  rank(query: string): Unit[] {
    const n = this.units.length;
    const q = [...new Set(words(query))];
    const scores = this.tf.map((tf, i) => {
      let s = 0;
      for (const w of q) {
        const f = tf.get(w);
        if (!f) continue;
        const df = this.df.get(w) ?? 0;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        s += (idf * f * 2.2) / (f + 1.2 * (1 - 0.75 + (0.75 * this.len[i]!) / this.avg));
      }
      return s;
    });
    return scores
      .map((s, i) => ({ s, i }))
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .map((x) => this.units[x.i]!);
  }
}

/** Each unit that still fits, in the given order. */
export function fill(ranked: readonly Unit[], budget: number): Set<string> {
  const out = new Set<string>();
  for (const u of ranked) {
    if (u.tokens > budget) continue;
    out.add(u.id);
    budget -= u.tokens;
  }
  return out;
}

/** The newest units that fit (a suffix: stops at the first that does not). */
export function newest(units: readonly Unit[], budget: number): Set<string> {
  const out = new Set<string>();
  for (let i = units.length - 1; i >= 0 && units[i]!.tokens <= budget; i--) {
    out.add(units[i]!.id);
    budget -= units[i]!.tokens;
  }
  return out;
}
