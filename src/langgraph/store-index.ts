import { bm25Scores } from "../embed/bm25";
import { EMBEDDED_ID } from "../embed/embedded";
import { DENSE_WEIGHT, fuseScores, type Ranked } from "../embed/fusion";
import { nearest, quantize } from "../embed/vectors";
import { backgroundVectors, embedWords, type WordTable } from "../embed/word-table";

/**
 * The LangGraph store's index (docs/guides/langgraph.md, "Search by meaning"): which texts of an
 * item's value are indexed, in LangGraph's path syntax (`$` the whole value; `a.b`; `list[*].text`,
 * `list[0]`, `list[-1]`; `*` every field; `{a,b.c}` several), and how a search's `query` ranks the
 * items by them: full-text and meaning, fused as recall is (src/embed/fusion.ts).
 */

/** LangGraph's default when neither the put nor the store names fields: the whole value as one text. */
export const DEFAULT_FIELDS = ["$"];
/** Texts one item indexes at most (each its own vector, as LangGraph embeds each path's texts apart). */
export const MAX_TEXTS = 16;
/** Characters of an item's texts kept for full-text ranking (its vectors read up to 4,096 words of each text). */
export const MAX_TEXT_CHARS = 4000;

/** A put's `index`: its own fields, `false` for none, null or absent for the default. */
export type IndexSpec = false | readonly string[] | null | undefined;

const leafText = (v: unknown): string[] => {
  if (v === null || v === undefined) return [];
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return [String(v)];
  return [JSON.stringify(v)];
};

/** A path's steps: names, `[…]` and `{…}` (a `.` separates names). */
const steps = (path: string): string[] => path.match(/\[[^\]]*\]|\{[^}]*\}|[^.[{]+/g) ?? [];

function textsAt(value: unknown, path: readonly string[]): string[] {
  const [step, ...rest] = path;
  if (step === undefined) return leafText(value);
  if (step.startsWith("[")) {
    if (!Array.isArray(value)) return [];
    const at = step.slice(1, -1).trim();
    if (at === "*") return value.flatMap((v) => textsAt(v, rest));
    const i = Number(at);
    if (!Number.isInteger(i)) return [];
    const item = value[i < 0 ? value.length + i : i];
    return item === undefined ? [] : textsAt(item, rest);
  }
  if (typeof value !== "object" || value === null) return [];
  if (step.startsWith("{")) {
    return step
      .slice(1, -1)
      .split(",")
      .flatMap((f) => textsAt(value, [...steps(f.trim()), ...rest]));
  }
  if (step === "*") return Object.values(value).flatMap((v) => textsAt(v, rest));
  return Object.hasOwn(value, step) ? textsAt((value as Record<string, unknown>)[step], rest) : [];
}

/** The texts the fields pick out of a value, in order, at most MAX_TEXTS. */
export function indexedTexts(value: Record<string, unknown>, fields: readonly string[]): string[] {
  const out = fields.flatMap((f) => (f.trim() === "$" ? [JSON.stringify(value)] : textsAt(value, steps(f))));
  return out.filter((t) => t.trim() !== "").slice(0, MAX_TEXTS);
}

/** An item's index columns: its texts (cut to MAX_TEXT_CHARS in all), their vectors when the table is loaded (else null, embedded when read). */
export type ItemIndex = { text: string | null; vec: Uint8Array | null; vecBy: string | null };

export function indexItem(value: Record<string, unknown>, spec: IndexSpec, table: WordTable | undefined): ItemIndex {
  if (spec === false) return { text: null, vec: null, vecBy: null };
  const texts = indexedTexts(value, spec ?? DEFAULT_FIELDS);
  if (texts.length === 0) return { text: null, vec: null, vecBy: null };
  const kept: string[] = [];
  let room = MAX_TEXT_CHARS;
  for (const t of texts) {
    if (room <= 0) break;
    kept.push(t.slice(0, room));
    room -= t.length;
  }
  return { text: JSON.stringify(kept), vec: table ? vectorsOf(table, texts) : null, vecBy: table ? EMBEDDED_ID : null };
}

/** The texts' vectors as int8 rows, one after another (texts with no known word have none). */
function vectorsOf(table: WordTable, texts: readonly string[]): Uint8Array {
  const rows = texts.map((t) => embedWords(table, t)).filter((v) => v.some((x) => x !== 0));
  const out = new Uint8Array(rows.length * table.dims);
  for (const [i, v] of rows.entries()) out.set(quantize(v), i * table.dims);
  return out;
}

/** A candidate of a ranked search, as its statement reads it (no value: the page's values are read once it is chosen). */
export type Candidate = { namespace: string; key: string; index_text: string | null; vec: ArrayBuffer | number[] | null; vec_by: string | null };
/** A ranked candidate: `score` null for an item with nothing indexed (LangGraph's unscored items, after the scored ones). */
export type RankedCandidate = { namespace: string; key: string; score: number | null };

const textsOf = (c: Candidate): string[] | null => {
  if (c.index_text === null) return null;
  const parsed: unknown = JSON.parse(c.index_text);
  return Array.isArray(parsed) ? parsed.map(String) : null;
};

/** A candidate's stored vectors, or its texts embedded again when another embedder (or none) made them. */
function storedVectors(table: WordTable, c: Candidate, texts: readonly string[]): Int8Array[] {
  const bytes = c.vec && c.vec_by === EMBEDDED_ID ? new Uint8Array(c.vec) : vectorsOf(table, texts);
  const all = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: Math.floor(all.length / table.dims) }, (_, i) => all.subarray(i * table.dims, (i + 1) * table.dims));
}

/**
 * The candidates (newest first) ranked for `query`: those with indexed texts by their fused score
 * (full-text BM25 over these candidates, and the best of their texts' similarity in meaning; 0 when
 * neither channel finds them, then by meaning, then newest), then those with nothing indexed, unscored.
 */
export function rankCandidates(candidates: readonly Candidate[], query: string, table: WordTable | undefined): RankedCandidate[] {
  const indexed = candidates.flatMap((c, i) => {
    const texts = textsOf(c);
    return texts ? [{ i, c, texts }] : [];
  });
  const bm25 = bm25Scores(
    query,
    indexed.map((x) => x.texts.join("\n")),
  );
  const fullText: Ranked<number>[] = indexed
    .map((x, j) => ({ key: x.i, score: bm25[j]! }))
    .filter((h) => h.score > 0)
    .sort((a, b) => b.score - a.score);
  const q = table ? embedWords(table, query) : undefined;
  const dense: Ranked<number>[] = [];
  let floor: number | undefined;
  if (table && q?.some((x) => x !== 0)) {
    const vectors = indexed.flatMap((x) => storedVectors(table, x.c, x.texts).map((vec) => ({ item: x.i, vec })));
    const seen = new Set<number>();
    const near = nearest(vectors, q, vectors.length, backgroundVectors(table));
    floor = near.floor;
    for (const { item, score } of near.hits) {
      if (seen.has(item)) continue; // an item counts by its closest text
      seen.add(item);
      dense.push({ key: item, score });
    }
  }
  const fused = new Map(fuseScores(fullText, dense, DENSE_WEIGHT, floor).map((f) => [f.key, f.score]));
  const closeness = new Map(dense.map((d, rank) => [d.key, rank]));
  const ranked = indexed
    .map((x) => ({ i: x.i, fused: fused.get(x.i) ?? 0, close: closeness.get(x.i) ?? Number.MAX_SAFE_INTEGER }))
    .sort((a, b) => b.fused - a.fused || a.close - b.close || a.i - b.i)
    .map((x) => x.i);
  const unindexed = candidates.flatMap((c, i) => (textsOf(c) ? [] : [i]));
  return [
    ...ranked.map((i) => ({ namespace: candidates[i]!.namespace, key: candidates[i]!.key, score: Math.round((fused.get(i) ?? 0) * 1e6) / 1e6 })),
    ...unindexed.map((i) => ({ namespace: candidates[i]!.namespace, key: candidates[i]!.key, score: null })),
  ];
}
