import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { DEFAULT_RECALL } from "../src/memory/recall-excerpts";
import { EMBEDDED_TURNS, loadWordTable } from "../src/embed/embedded";
import { fuseScores, type Ranked } from "../src/embed/fusion";
import { embedWords, type WordTable } from "../src/embed/word-table";
import type { ThreadDO } from "../src/object/thread-object";
import { distinctHits, EXCERPT_HEADER_TOKENS, pickRecall, recalledCost, RecallRows, rowAccess } from "../src/thread/recall";
import { searchTerms } from "../src/core/search-terms";
import { byTime, namedSpan } from "../src/thread/recall-time";
import { indexWaiting, type RecallHit, recallMatch, searchRecall, WordCounts } from "../src/thread/recall-index";
import { ThreadStore } from "../src/thread/thread-store";
import { mustUpdate, stubFor } from "./thread-support";

/**
 * Turn recall's method, tried offline over the LoCoMo conversations (not part of `npm test`):
 * each conversation in a thread object (real SQLite, FTS5, the embedded word table), each
 * question's turns at 1,000 / 2,000 / 4,000 tokens as the thread log's recall picks them, with
 * the ranking's parts (fusion, the dense channel's weighting, neighbours, share) varied here.
 * `shipped` is the store's own recall; every other variant is this file's copy of recallWindow.
 *   npx vitest run -c bench/recall-vitest.config.ts bench/recall-tune.bench.ts
 */
type Turn = { role: "user" | "assistant"; content: string; created_at: number };
type Qa = { question: string; category: number; evidence: string[] };
const convs = JSON.parse((env as unknown as { LOCOMO: string }).LOCOMO) as { id: string; turns: Turn[]; dias: string[]; qa: Qa[] }[];
const BUDGETS = [1000, 2000, 4000];
const DIAG = false;
const HOLDOUT = new Set(["42", "43"]);

type Embed = (text: string) => Float32Array;
type Variant = {
  name: string;
  share?: number;
  neighbours?: number;
  /** Fuses full-text and dense hits (each best first) into one list. */
  fuse?: (lexical: Ranked<number>[], dense: Ranked<number>[]) => Ranked<number>[];
  /** The dense channel's text vectors (default: the shipped embedder). */
  embed?: (table: WordTable, df: Map<string, number>, n: number) => Embed;
  denseLimit?: (limit: number) => number;
  /** A turn's dense score plus this share of its neighbours' mean (its context's meaning). */
  denseSmooth?: number;
  /** The dense channel as soft word matching: each query word's best cosine with a turn's words (at least `theta`), idf-weighted. */
  soft?: { theta: number; exact: boolean };
  /** false: no recall by time (recall-time.ts). */
  time?: false;
  /** Rocchio feedback on the dense query: its vector plus `beta` × the mean of the top `k` full-text hits' vectors. */
  rocchio?: { k: number; beta: number };
  /** The recent window: the newest `messages` messages, within [min, max] of the budget (instead of 1 − share of it). */
  recentMessages?: { messages: number; min: number; max: number };
};

const shippedFuse = (w: number) => (l: Ranked<number>[], d: Ranked<number>[]) => fuseScores(l, d, w);
const rrf =
  (wd: number, k = 60) =>
  (l: Ranked<number>[], d: Ranked<number>[]) => {
    const m = new Map<number, number>();
    for (const [i, h] of l.entries()) m.set(h.key, (m.get(h.key) ?? 0) + 1 / (k + i + 1));
    for (const [i, h] of d.entries()) m.set(h.key, (m.get(h.key) ?? 0) + wd / (k + i + 1));
    return [...m].map(([key, score]) => ({ key, score })).sort((a, b) => b.score - a.score);
  };

/** The table's vector of a text with per-word weights `w` (undefined: left out), unit length. */
const weighted =
  (table: WordTable, w: (word: string, rank: number) => number | undefined): Embed =>
  (text: string) => {
    const out = new Float32Array(table.dims);
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
      const i = table.index.get(word);
      if (i === undefined) continue;
      const k = w(word, i);
      if (!k) continue;
      const s = k * table.scales[i]!;
      for (let d = 0; d < table.dims; d++) out[d]! += s * table.rows[i * table.dims + d]!;
    }
    const n = Math.hypot(...out);
    if (n > 0) for (let d = 0; d < out.length; d++) out[d]! /= n;
    return out;
  };
const ZIPF = Math.log(400_000) + 0.5772;
const sif = (a: number) => (table: WordTable) => weighted(table, (_w, r) => a / (a + 1 / ((r + 1) * ZIPF)));
const threadIdf = (table: WordTable, df: Map<string, number>, n: number) => weighted(table, (w) => Math.log((n + 1) / ((df.get(w) ?? 0) + 1)));
const threadSif = (a: number) => (table: WordTable, df: Map<string, number>, n: number) => weighted(table, (w) => a / (a + (df.get(w) ?? 0) / n));

/** The store's defaults (replica), then what was tried against them (bench/README.md, "Recall's method, offline"). */
const VARIANTS: Variant[] = [
  { name: "replica", fuse: shippedFuse(0.4), neighbours: 2, rocchio: { k: 5, beta: 0.5 } },
  { name: "no feedback (before)", fuse: shippedFuse(0.4), neighbours: 2 },
  { name: "no time", fuse: shippedFuse(0.4), neighbours: 2, time: false },
  { name: "one neighbour, no time (before)", fuse: shippedFuse(0.4), neighbours: 1, time: false },
  { name: "words only", fuse: (l) => l, neighbours: 2 },
  { name: "no neighbours", fuse: shippedFuse(0.4), neighbours: 0 },
  { name: "three neighbours", fuse: shippedFuse(0.4), neighbours: 3 },
  { name: "share 0.9", fuse: shippedFuse(0.4), neighbours: 2, share: 0.9 },
  { name: "dense weight 0.2", fuse: shippedFuse(0.2), neighbours: 2 },
  { name: "dense weight 0.7", fuse: shippedFuse(0.7), neighbours: 2 },
  { name: "reciprocal rank, dense 0.5", fuse: rrf(0.5), neighbours: 2 },
  { name: "SIF a = 1e-2", fuse: shippedFuse(0.4), neighbours: 2, embed: sif(1e-2) },
  { name: "the thread's idf", fuse: shippedFuse(0.4), neighbours: 2, embed: threadIdf },
  { name: "the thread's SIF (a = 0.01)", fuse: shippedFuse(0.4), neighbours: 2, embed: threadSif(0.01) },
  { name: "dense smoothed over neighbours (0.5)", fuse: shippedFuse(0.4), neighbours: 2, denseSmooth: 0.5 },
  { name: "soft word matching (cos >= 0.5)", fuse: shippedFuse(0.4), neighbours: 2, soft: { theta: 0.5, exact: false } },
  { name: "Rocchio: + 1 x mean of top-10 full-text hits", fuse: shippedFuse(0.4), neighbours: 2, rocchio: { k: 10, beta: 1 } },
  { name: "recent = last 8 messages, 10-25% of budget", fuse: shippedFuse(0.4), neighbours: 2, recentMessages: { messages: 8, min: 0.1, max: 0.25 } },
  {
    name: "Rocchio top-5 0.5 + recent last 8",
    fuse: shippedFuse(0.4),
    neighbours: 2,
    rocchio: { k: 5, beta: 0.5 },
    recentMessages: { messages: 8, min: 0.1, max: 0.25 },
  },
];

type Score = { any: number; all: number };
const score = (evidence: readonly string[], got: ReadonlySet<string>): Score => {
  const hits = evidence.filter((e) => got.has(e)).length;
  return { any: hits > 0 ? 1 : 0, all: hits === evidence.length ? 1 : 0 };
};

it("recall variants over LoCoMo", async () => {
  const table = await loadWordTable(env.ASSETS);
  if (!table) throw new Error("no word table");
  // rows[variant][budget] = per-question scores with conversation and category
  const rows = new Map<string, { conv: string; cat: number; b: number; s: Score }[]>();
  const add = (v: string, conv: string, cat: number, b: number, s: Score) => {
    if (!rows.has(v)) rows.set(v, []);
    rows.get(v)!.push({ conv, cat, b, s });
  };
  for (const c of convs) {
    const stub = stubFor(`tune-${c.id}`);
    await runInDurableObject(stub, (_instance: ThreadDO, state) => {
      const store = ThreadStore.of(state.storage, { embedder: EMBEDDED_TURNS });
      const messages = c.turns.map((t, i) => ({ ...t, id: c.dias[i]! }));
      for (let i = 0; i < messages.length; i += 1000) mustUpdate(store, { ops: [{ op: "append", messages: messages.slice(i, i + 1000) }] });
      const sql = state.storage.sql;
      state.storage.transactionSync(() => indexWaiting(sql));
      const seqRows = sql.exec<{ seq: number; id: string }>(`SELECT seq, id FROM messages ORDER BY seq`).toArray();
      const seqOf = new Map(seqRows.map((r) => [r.id, r.seq]));
      const idOf = new Map(seqRows.map((r) => [r.seq, r.id]));
      const atOf = new Map(seqRows.map((r, i) => [r.seq, messages[i]!.created_at]));
      const textOf = new Map(seqRows.map((r, i) => [r.seq, messages[i]!.content]));
      // document frequencies over the thread's words (for idf weightings)
      const df = new Map<string, number>();
      for (const m of messages) for (const w of new Set(m.content.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])) df.set(w, (df.get(w) ?? 0) + 1);
      const counts = new WordCounts();
      const known = new RecallRows();
      const denseCache = new Map<string, { seqs: number[]; vecs: Float32Array[]; mean: Float32Array; along: Float32Array }>();
      const denseOf = (v: Variant) => {
        const key = v.embed ? v.name : "default";
        let d = denseCache.get(key);
        if (d) return { d, e: v.embed ? v.embed(table, df, messages.length) : (t: string) => embedWords(table, t) };
        const e: Embed = v.embed ? v.embed(table, df, messages.length) : (t: string) => embedWords(table, t);
        const seqs = seqRows.map((r) => r.seq);
        const vecs = seqs.map((s) => e(textOf.get(s)!));
        const mean = new Float32Array(table.dims);
        for (const x of vecs) for (let k = 0; k < x.length; k++) mean[k]! += x[k]!;
        const mn = Math.hypot(...mean);
        if (mn > 0) for (let k = 0; k < mean.length; k++) mean[k]! /= mn;
        const along = new Float32Array(vecs.map((x) => x.reduce((s, y, k) => s + y * mean[k]!, 0)));
        d = { seqs, vecs, mean, along };
        denseCache.set(key, d);
        return { d, e };
      };
      const denseSearch = (v: Variant, q: string, before: number, limit: number, feedback: readonly number[] = []): RecallHit[] => {
        const { d, e } = denseOf(v);
        let qv = e(q);
        if (v.rocchio && feedback.length > 0 && qv.some((x) => x !== 0)) {
          const at = new Map(d.seqs.map((s, i) => [s, i]));
          const fb = feedback.slice(0, v.rocchio.k).flatMap((s) => (at.has(s) ? [d.vecs[at.get(s)!]!] : []));
          if (fb.length > 0) {
            const moved = Float32Array.from(qv);
            for (const x of fb) for (let k = 0; k < moved.length; k++) moved[k]! += (v.rocchio.beta * x[k]!) / fb.length;
            const n = Math.hypot(...moved);
            if (n > 0) for (let k = 0; k < moved.length; k++) moved[k]! /= n;
            qv = moved;
          }
        }
        let qn = 0;
        let qm = 0;
        for (let k = 0; k < qv.length; k++) {
          qn += qv[k]! * qv[k]!;
          qm += qv[k]! * d.mean[k]!;
        }
        const rest = qn - qm * qm;
        if (rest <= 1e-9) return [];
        const out: RecallHit[] = [];
        for (const [i, s] of d.seqs.entries()) {
          if (s >= before) break;
          const x = d.vecs[i]!;
          let dot = 0;
          let n2 = 0;
          for (let k = 0; k < x.length; k++) {
            dot += qv[k]! * x[k]!;
            n2 += x[k]! * x[k]!;
          }
          const a = d.along[i]!;
          const left = n2 - a * a;
          out.push({ seq: s, score: left > 1e-9 ? (dot - qm * a) / Math.sqrt(left * rest) : 0 });
        }
        const lam = v.denseSmooth ?? 0;
        if (lam > 0) {
          const raw = out.map((h) => h.score);
          for (const [i, h] of out.entries()) h.score = raw[i]! + (lam * ((raw[i - 1] ?? 0) + (raw[i + 1] ?? 0))) / 2;
        }
        return out.sort((a, b) => b.score - a.score || b.seq - a.seq).slice(0, limit);
      };
      const unit = (i: number) => {
        const v = new Float32Array(table.dims);
        for (let d = 0; d < table.dims; d++) v[d] = table.rows[i * table.dims + d]! * table.scales[i]!;
        const n = Math.hypot(...v);
        for (let d = 0; d < table.dims; d++) v[d]! /= n || 1;
        return v;
      };
      const wordVec = new Map<number, Float32Array>();
      const vecOf = (i: number) => wordVec.get(i) ?? (wordVec.set(i, unit(i)), wordVec.get(i)!);
      const turnWords = new Map(seqRows.map((r, k) => [r.seq, [...new Set(messages[k]!.content.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])]]));
      const softSearch = (v: Variant, q: string, before: number, limit: number): RecallHit[] => {
        const { theta, exact } = v.soft!;
        const qs = searchTerms(q).flatMap((w) => {
          const i = table.index.get(w);
          return i === undefined ? [] : [{ w, v: vecOf(i), idf: Math.log((messages.length + 1) / ((df.get(w) ?? 0) + 1)) }];
        });
        if (qs.length === 0) return [];
        const simCache = new Map<string, number>();
        const sim = (a: { w: string; v: Float32Array }, w: string) => {
          const key = `${a.w} ${w}`;
          let s = simCache.get(key);
          if (s === undefined) {
            const i = table.index.get(w);
            if (i === undefined) s = 0;
            else {
              const b = vecOf(i);
              s = 0;
              for (let d = 0; d < b.length; d++) s += a.v[d]! * b[d]!;
            }
            simCache.set(key, s);
          }
          return s;
        };
        const out: RecallHit[] = [];
        for (const r of seqRows) {
          if (r.seq >= before) break;
          let sc = 0;
          for (const a of qs) {
            let best = 0;
            for (const w of turnWords.get(r.seq)!) {
              if (!exact && w === a.w) continue;
              const x = sim(a, w);
              if (x > best) best = x;
            }
            if (best >= theta) sc += a.idf * best;
          }
          if (sc > 0) out.push({ seq: r.seq, score: sc });
        }
        return out.sort((a, b) => b.score - a.score || b.seq - a.seq).slice(0, limit);
      };
      const ids = (ms: readonly { id: string }[]) => ms.map((m) => m.id);
      const variantIds = (v: Variant, q: string, b: number): Set<string> => {
        const full = store.recent(b);
        if (!full.truncated) return new Set(ids(full.messages));
        const share = v.share ?? 0.75;
        const rm = v.recentMessages;
        const lastN = rm ? store.recent(b, { maxMessages: rm.messages }).tokens : 0;
        const window = store.recent(rm ? Math.floor(Math.min(rm.max * b, Math.max(rm.min * b, lastN))) : Math.floor(b * (1 - share)));
        const start = seqOf.get(window.messages[0]!.id)!;
        const room = b - window.tokens - EXCERPT_HEADER_TOKENS;
        const limit = Math.min(128, 16 + Math.ceil(room / 16));
        const match = recallMatch(sql, q, counts);
        const lexical = match === null ? [] : searchRecall(sql, match, start, limit);
        const dense = v.soft
          ? softSearch(v, q, start, limit)
          : v.fuse
            ? denseSearch(
                v,
                q,
                start,
                v.denseLimit ? v.denseLimit(limit) : limit,
                lexical.map((h) => h.seq),
              )
            : [];
        const fused = (v.fuse ?? ((l: Ranked<number>[]) => l))(
          lexical.map((h) => ({ key: h.seq, score: h.score })),
          dense.map((h) => ({ key: h.seq, score: h.score })),
        ).map((f) => ({ seq: f.key, score: f.score }));
        // By time, as the store does (recall-time.ts), unless the variant leaves it out.
        const dated = v.time === false ? fused : byTime(fused, namedSpan(q), (seq) => atOf.get(seq));
        if (fused.length === 0) return new Set(ids(full.messages));
        const neighbours = v.neighbours ?? 1;
        const acc = rowAccess(sql, start, dated, neighbours + 2, known);
        const hits = distinctHits(dated, (s) => known.row(s)?.hash);
        const picked = pickRecall(hits, acc, room, neighbours);
        const wide = store.recent(b - recalledCost(picked));
        const wideStart = seqOf.get(wide.messages[0]!.id)!;
        return new Set([...ids(wide.messages), ...picked.filter((p) => p.seq < wideStart).map((p) => idOf.get(p.seq)!)]);
      };
      for (const qa of c.qa) {
        if (qa.evidence.length === 0) continue;
        if (DIAG) {
          const v = VARIANTS[0]!;
          const got = variantIds(v, qa.question, 2000);
          if (!qa.evidence.some((e) => got.has(e))) {
            const window = store.recent(500);
            const start = seqOf.get(window.messages[0]!.id)!;
            const match = recallMatch(sql, qa.question, counts);
            const lex = match === null ? [] : searchRecall(sql, match, start, 1000);
            const den = denseSearch(v, qa.question, start, 1000);
            const ev = qa.evidence.map((e) => seqOf.get(e)).filter((x): x is number => x !== undefined);
            const rank = (l: RecallHit[]) =>
              Math.min(
                ...ev.map((e) => {
                  const i = l.findIndex((h) => Math.abs(h.seq - e) <= 2);
                  return i < 0 ? 9999 : i + 1;
                }),
              );
            const own = (l: RecallHit[]) =>
              Math.min(
                ...ev.map((e) => {
                  const i = l.findIndex((h) => h.seq === e);
                  return i < 0 ? 9999 : i + 1;
                }),
              );
            console.log(
              `MISS ${c.id} cat${qa.category} lex ${own(lex)}/${rank(lex)} dense ${own(den)}/${rank(den)} | ${qa.question} || ${ev
                .map((e) => textOf.get(e))
                .join(" | ")
                .slice(0, 300)}`,
            );
          }
        }
        for (const b of BUDGETS) {
          const r = store.recent(b, { recall: { ...DEFAULT_RECALL, query: qa.question } });
          add("shipped", c.id, qa.category, b, score(qa.evidence, new Set([...ids(r.messages), ...(r.recalled ?? []).map((t) => t.message.id)])));
          for (const v of VARIANTS) add(v.name, c.id, qa.category, b, score(qa.evidence, variantIds(v, qa.question, b)));
        }
      }
    });
  }
  const f = (x: number) => x.toFixed(3);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const lines: string[] = [];
  lines.push("| variant | 1k any | 2k any | 2k all | 4k any | held-out 42,43 1k / 2k / 2k all | others 1k / 2k | per conv 2k any |");
  for (const [name, rs] of rows) {
    const at = (b: number, sel: (r: (typeof rs)[number]) => boolean = () => true, k: keyof Score = "any") =>
      f(mean(rs.filter((r) => r.b === b && sel(r)).map((r) => r.s[k])));
    const held = (r: { conv: string }) => HOLDOUT.has(r.conv);
    const others = (r: { conv: string }) => !HOLDOUT.has(r.conv);
    const perConv = convs.map((c) => `${c.id} ${at(2000, (r) => r.conv === c.id)}`).join(", ");
    lines.push(
      `| ${name} | ${at(1000)} | ${at(2000)} | ${at(2000, undefined, "all")} | ${at(4000)} | ${at(1000, held)} / ${at(2000, held)} / ${at(2000, held, "all")} | ${at(1000, others)} / ${at(2000, others)} | ${perConv} |`,
    );
  }
  console.log(`TUNE\n${lines.join("\n")}`);
  expect(rows.size).toBeGreaterThan(0);
});
