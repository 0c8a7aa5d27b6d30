import type { Message } from "../core/message";
import { searchTerms } from "../core/search-terms";
import { estimateTokens, type TokenEstimator } from "../core/tokens";
import { type Channels, DENSE_WEIGHT, fuseScores } from "../embed/fusion";
import { messageHash } from "./message-hash";
import { recallMatch, searchRecall, type RecallHit, type WordCounts } from "./recall-index";
import { LEARNT_ROWS, type RecallScores } from "./recall-scores";
import { byTime, namedSpan } from "./recall-time";
import { decodeMessage } from "./thread-rows";
import type { LoadRecentResult, RecallAsk, RecalledTurn } from "./types";

/**
 * Recall of earlier turns: when a thread holds more than the turn budget, `share` of it goes
 * to the earlier turns that best match the query (the recall index, recall-index.ts), each
 * with `neighbours` turns either side — the answer to a question is often the next turn —
 * and the newest window keeps the rest. Runs inside the thread's object over its own SQLite:
 * one FTS5 query (or the rows written since the last one, recall-scores.ts), a few index seeks
 * per match, one read of the chosen rows.
 *
 * The fusion point for more channels (a dense one later): `pickRecall` takes scored hits;
 * another channel's hits merge into that list (e.g. reciprocal-rank fusion) before picking.
 */

/** Token cost of the excerpt message's framing (its header line and per-message overhead). */
export const EXCERPT_HEADER_TOKENS = 48;
/** Token cost of one group's time line. */
export const EXCERPT_GROUP_TOKENS = 8;
/** A turn next to a strong match ranks higher: its neighbour's score counts this much. */
const NEIGHBOUR_WEIGHT = 0.3;
const MAX_HITS = 128;

/** Why a turn was recalled: it matched the query, or it sits next to one that did. */
export type RecallWhy = RecalledTurn["why"];

/** What recalled turns cost as the excerpt message: its framing, one time line per run, each turn's stored estimate. */
export function recalledCost(turns: readonly { tokens: number; group: number }[]): number {
  if (turns.length === 0) return 0;
  return EXCERPT_HEADER_TOKENS + new Set(turns.map((t) => t.group)).size * EXCERPT_GROUP_TOKENS + turns.reduce((n, t) => n + t.tokens, 0);
}

type Row = { seq: number; role: string; tokens: number };
/** A row as RecallRows keeps it: with its content hash (message-hash.ts; null in rows stored before hashes were) and its time. */
type KnownRow = Row & { hash: string | null; at: number };
export type Picked = Row & { score: number; why: RecallWhy; group: number };

/** Rows next to a position, among the rows recall may use (older than the window): every one is below `end`. */
export interface RowAccess {
  readonly end: number;
  prev(seq: number): Row | undefined;
  next(seq: number): Row | undefined;
}

/** pickRecall's marks by position (HIT, SEEN, TAKEN) and the hits' scores, kept between calls (reset where set): no allocation per recall. */
let marks = new Uint8Array(0);
let ownScores = new Float64Array(0);
const HIT = 1;
const SEEN = 2;
const TAKEN = 4;

/**
 * Chooses what to recall within `room` tokens: candidates are the hits and the rows next to
 * them, ranked by their own score plus NEIGHBOUR_WEIGHT × the better neighbour's; each is taken
 * with `neighbours` rows either side when that fits, else alone. A tool result never goes
 * without its call nor a call without its results: a group grows over adjacent tool rows.
 */
export function pickRecall(hits: readonly RecallHit[], rows: RowAccess, room: number, neighbours: number): Picked[] {
  if (marks.length < rows.end) {
    marks = new Uint8Array(Math.max(rows.end, 2 * marks.length));
    ownScores = new Float64Array(marks.length);
  }
  const touched: number[] = [];
  const mark = (seq: number, bit: number) => {
    if (marks[seq] === 0) touched.push(seq);
    marks[seq]! |= bit;
  };
  try {
    for (const h of hits) {
      if (h.seq < 0 || h.seq >= rows.end) continue; // never a usable row
      mark(h.seq, HIT);
      ownScores[h.seq] = h.score;
    }
    const own = (r: Row | undefined): number => (r !== undefined && marks[r.seq]! & HIT ? ownScores[r.seq]! : 0);
    const candidates: { row: Row; score: number }[] = [];
    const consider = (r: Row | undefined, p = r && rows.prev(r.seq), n = r && rows.next(r.seq)) => {
      if (r === undefined || marks[r.seq]! & SEEN) return;
      mark(r.seq, SEEN);
      candidates.push({ row: r, score: own(r) + NEIGHBOUR_WEIGHT * Math.max(own(p), own(n)) });
    };
    for (const h of hits) {
      const self = rows.next(h.seq - 1) ?? rows.prev(h.seq + 1);
      if (!self || self.seq !== h.seq) continue; // not a usable row (older than the window only)
      const p = rows.prev(h.seq);
      const n = rows.next(h.seq);
      consider(self, p, n);
      consider(p);
      consider(n);
    }
    candidates.sort((a, b) => b.score - a.score || b.row.seq - a.row.seq);
    const picked: Picked[] = [];
    const withPairs = (span: Row[]): Row[] => {
      while (span[0]!.role === "tool") {
        const p = rows.prev(span[0]!.seq);
        if (!p) break;
        span.unshift(p);
      }
      for (let n = rows.next(span[span.length - 1]!.seq); n?.role === "tool"; n = rows.next(n.seq)) span.push(n);
      return span;
    };
    const cost = (span: readonly Row[]) => {
      let t = EXCERPT_GROUP_TOKENS;
      for (const r of span) if (!(marks[r.seq]! & TAKEN)) t += r.tokens;
      return t;
    };
    for (const { row: self, score } of candidates) {
      if (room < EXCERPT_GROUP_TOKENS) break; // the room only shrinks
      // Every span holds this row, not yet taken: one it does not fit alone is not built (most candidates, once the room is nearly spent).
      if (marks[self.seq]! & TAKEN || self.tokens + EXCERPT_GROUP_TOKENS > room) continue;
      const core = withPairs([self]);
      let span = core;
      if (neighbours > 0) {
        const wide = [...core];
        for (let i = 0; i < neighbours; i++) {
          const p = rows.prev(wide[0]!.seq);
          if (p) wide.unshift(p);
          const n = rows.next(wide[wide.length - 1]!.seq);
          if (n) wide.push(n);
        }
        span = withPairs(wide);
      }
      let spent = cost(span);
      if (spent > room && span !== core) {
        span = core;
        spent = cost(core);
      }
      if (spent > room) continue;
      room -= spent;
      const rounded = Math.round(score * 1e6) / 1e6;
      for (const r of span) {
        if (marks[r.seq]! & TAKEN) continue;
        mark(r.seq, TAKEN);
        const match = r.seq === self.seq && (marks[r.seq]! & HIT) !== 0;
        picked.push({ seq: r.seq, role: r.role, tokens: r.tokens, score: rounded, why: match ? "match" : "neighbour", group: 0 });
      }
    }
    // Groups renumbered as runs of adjacent rows: the spans are intervals, so there are no more
    // runs than spans taken, and each run costs one time line at most.
    picked.sort((a, b) => a.seq - b.seq);
    let run = 0;
    for (const [i, p] of picked.entries()) {
      if (i === 0 || rows.next(picked[i - 1]!.seq)?.seq !== p.seq) run++;
      p.group = run;
    }
    return picked;
  } finally {
    for (const seq of touched) marks[seq] = 0;
  }
}

/**
 * The hits with each message's text recalled once: a hit whose message repeats a better-ranked hit's (the same
 * content hash: a question asked again, a stock reply) is dropped; repeats score alike, and of equal scores the
 * newer ranks first, so the newest is the one recalled. Repeats would fill the recall share with copies: they cost
 * the model tokens, the turn its work and its report a line each, and tell nothing the first did not.
 * `hashOf` undefined or null: never a repeat.
 */
export function distinctHits(hits: readonly RecallHit[], hashOf: (seq: number) => string | null | undefined): RecallHit[] {
  const seen = new Set<string>();
  return hits.filter((h) => {
    const hash = hashOf(h.seq);
    if (hash == null) return true;
    if (seen.has(hash)) return false;
    seen.add(hash);
    return true;
  });
}

/** Bounds of RecallRows: positions known, and decoded messages (and their JSON's characters). */
const MAX_KNOWN_ROWS = 16_384;
const MAX_KNOWN_MESSAGES = 1024;
const MAX_KNOWN_CHARS = 4_000_000;

/**
 * What recall has read of the rows, kept by the thread's store between turns (as WordCounts
 * is): each position's role and token estimate, or that no live row is there, and the decoded
 * messages it recalled. Appends only add rows after the newest one, so what was read of older
 * rows stays true until a write that changes or removes rows (replace, remove, remove_all, fork),
 * on which the store clears it. A position with no live row below one that has a row stays empty
 * for the same reason (SQLite gives a new row the highest position + 1). Bounded: when full it
 * starts over. Successive turns of a conversation recall largely the same rows; their neighbours'
 * rows and JSON decoding were two fifths of a recall in a turn.
 */
export class RecallRows {
  /** By position (a plain array: its reads are several times cheaper than a Map's, and recall reads hundreds a turn). */
  private rows: (KnownRow | null | undefined)[] = [];
  private known = 0;
  private readonly messages = new Map<number, Message>();
  private chars = 0;

  clear(): void {
    this.rows = [];
    this.known = 0;
    this.messages.clear();
    this.chars = 0;
  }

  /** Reads the rows within `reach` positions of each hit, below `before` (the newest live row at most), not known yet. */
  load(sql: SqlStorage, hits: readonly RecallHit[], reach: number, before: number): void {
    if (this.known + hits.length * (2 * reach + 1) > MAX_KNOWN_ROWS) {
      this.rows = [];
      this.known = 0;
    }
    // Only the unknown positions are collected: after a thread's first recalls nearly every one near a hit is known.
    const missing: number[] = [];
    const rows = this.rows;
    for (const h of hits) {
      for (let s = Math.max(1, h.seq - reach); s <= h.seq + reach && s < before; s++) {
        if (rows[s] !== undefined) continue;
        rows[s] = null; // until read: no live row there, unless the read below finds one
        missing.push(s);
      }
    }
    if (missing.length === 0) return;
    this.known += missing.length;
    const packed = sql
      .exec<{ rows: string }>(
        `SELECT json_group_array(json_array(seq, role, tokens, hash, created_at)) AS rows FROM messages WHERE seq IN (SELECT value FROM json_each(?))`,
        JSON.stringify(missing),
      )
      .one().rows;
    for (const [seq, role, tokens, hash, at] of JSON.parse(packed) as [number, string, number, string | null, number][])
      rows[seq] = { seq, role, tokens, hash, at };
  }

  /**
   * Rows just appended at positions up to `last` (an append gives each new row the highest
   * position + 1, in order): their rows and decoded messages are known without a read. Only a
   * store that has recalled keeps them (ThreadStore), so a thread never recalled holds nothing.
   */
  appended(last: number, entries: readonly { message: Message; role: string; tokens: number; bytes: number; hash: string }[]): void {
    const first = last - entries.length + 1;
    if (first < 1 || this.known + entries.length > MAX_KNOWN_ROWS) return;
    for (const [k, e] of entries.entries()) this.rows[first + k] = { seq: first + k, role: e.role, tokens: e.tokens, hash: e.hash, at: e.message.created_at };
    this.known += entries.length;
    // The messages only while they fit: a turn not recalled yet never pushes out the ones recall has used.
    const bytes = entries.reduce((n, e) => n + e.bytes, 0);
    if (this.messages.size + entries.length > MAX_KNOWN_MESSAGES || this.chars + bytes > MAX_KNOWN_CHARS) return;
    for (const [k, e] of entries.entries()) this.messages.set(first + k, e.message);
    this.chars += bytes;
  }

  /** Whether recall has read anything since the store began or last cleared it. */
  get used(): boolean {
    return this.known > 0 || this.messages.size > 0;
  }

  /** The row at `seq`: a Row, null when no live row is there, undefined when not known. */
  row(seq: number): KnownRow | null | undefined {
    return this.rows[seq];
  }

  /** The decoded messages at `seqs`, reading those not known yet in one statement. */
  decoded(sql: SqlStorage, seqs: readonly number[]): Map<number, Message> {
    const out = new Map<number, Message>();
    const missing: number[] = [];
    for (const s of seqs) {
      const m = this.messages.get(s);
      if (m) out.set(s, m);
      else missing.push(s);
    }
    if (missing.length === 0) return out;
    const read = sql
      .exec<{ seq: number; json: string }>(`SELECT seq, json FROM messages WHERE seq IN (SELECT value FROM json_each(?))`, JSON.stringify(missing))
      .toArray();
    const chars = read.reduce((n, r) => n + r.json.length, 0);
    const keep = chars <= MAX_KNOWN_CHARS && read.length <= MAX_KNOWN_MESSAGES;
    if (keep && (this.messages.size + read.length > MAX_KNOWN_MESSAGES || this.chars + chars > MAX_KNOWN_CHARS)) {
      this.messages.clear();
      this.chars = 0;
    }
    for (const r of read) {
      const m = decodeMessage(r.json);
      out.set(r.seq, m);
      if (keep) this.messages.set(r.seq, m);
    }
    if (keep) this.chars += chars;
    return out;
  }
}

/**
 * The rows older than `before`, by position, as pickRecall reads them: those within a few
 * positions of every hit in one read (of the ones `known` does not hold yet), and an index seek
 * on seq for any other (a tool run or a gap left by removed messages). The read returns one
 * JSON array rather than a row per message: hundreds of small rows cost more to hand to
 * JavaScript one by one than to find.
 */
export function rowAccess(sql: SqlStorage, before: number, hits: readonly RecallHit[], reach: number, known: RecallRows = new RecallRows()): RowAccess {
  known.load(sql, hits, reach, before);
  const near = (seq: number) => (seq < before ? (known.row(seq) ?? undefined) : undefined);
  const one = (q: string, seq: number) => sql.exec<Row>(q, seq, before).toArray()[0];
  return {
    end: before,
    prev: (seq) =>
      near(seq - 1) ?? (seq > 1 ? one(`SELECT seq, role, tokens FROM messages WHERE seq < ? AND seq < ? ORDER BY seq DESC LIMIT 1`, seq) : undefined),
    next: (seq) =>
      near(seq + 1) ?? (seq + 1 < before ? one(`SELECT seq, role, tokens FROM messages WHERE seq > ? AND seq < ? ORDER BY seq LIMIT 1`, seq) : undefined),
  };
}

const seqOf = (sql: SqlStorage, id: string): number | undefined => sql.exec<{ seq: number }>(`SELECT seq FROM messages WHERE id = ?`, id).toArray()[0]?.seq;
/** The position of the message `id` (past the newest when it is not given or not there), the thread's highest, and the index's reach (recall-index.ts). */
function positionsOf(sql: SqlStorage, id: string | undefined): { start: number; highest: number; indexed: number } {
  const r = sql
    .exec<{ start: number | null; highest: number; indexed: number }>(
      `SELECT (SELECT seq FROM messages WHERE id = ?) AS start, COALESCE((SELECT MAX(seq) FROM messages), 0) AS highest, (SELECT through FROM recall_indexed) AS indexed`,
      id ?? null,
    )
    .one();
  return { start: r.start ?? r.highest + 1, highest: r.highest, indexed: r.indexed };
}

/**
 * The dense channel: the rows older than `before` closest in meaning to `query`, best first (thread-recall.ts); `feedback`,
 * the full-text channel's hits (best first), moves the query toward what its words found (recall-vectors.ts search).
 */
export type DenseSearch = (query: string, before: number, limit: number, feedback: readonly number[]) => RecallHit[];

/** What a store keeps between recalls, how it brings waiting messages into the index, and its dense channel when it has one (ThreadStore). */
export type RecallKept = { counts: WordCounts; known: RecallRows; scores: RecallScores; catchUp: () => void; dense?: DenseSearch };

/** Full-text and dense hits as one ranking (fusion.ts fuseScores), each with its channels; full-text alone when there is no dense channel. */
export function fuseHits(lexical: readonly RecallHit[], dense: readonly RecallHit[]): { hits: RecallHit[]; channels: Map<number, Channels> } {
  const fused = fuseScores(
    lexical.map((h) => ({ key: h.seq, score: h.score })),
    dense.map((h) => ({ key: h.seq, score: h.score })),
    DENSE_WEIGHT,
  );
  return { hits: fused.map((f) => ({ seq: f.key, score: f.score })), channels: new Map(fused.map((f) => [f.key, f.channels])) };
}

/**
 * The turns for `budget` tokens with recall: the newest window that fits when the whole
 * thread does (or nothing matches the query); otherwise the newest window within
 * (1 − share) × budget, the recalled earlier turns within the rest, and whatever recall left
 * unused given back to the window. `recent` is the store's newest-window read (tail cache).
 */
export function recallWindow(
  sql: SqlStorage,
  recent: (maxTokens: number) => LoadRecentResult,
  budget: number,
  ask: RecallAsk,
  { counts, known, scores, catchUp, dense }: RecallKept,
): LoadRecentResult {
  const full = recent(budget);
  const plain = { ...full, recalled: [], recalled_tokens: 0 };
  const share = Math.min(1, Math.max(0, ask.share));
  if (!full.truncated || share === 0) return plain;
  const window = recent(Math.floor(budget * (1 - share)));
  // The window's first position and the thread's highest, in one statement, read only once a query has words;
  // a message older than the window that still waits for the index joins it first (recall-index.ts, v10).
  let at: { start: number; highest: number } | undefined;
  const positions = () => {
    if (at) return at;
    const p = positionsOf(sql, window.messages[0]?.id);
    if (p.indexed < p.start - 1) catchUp();
    return (at = p);
  };
  const byMeaning = (ask.channels?.includes("dense") ?? true) ? dense : undefined;
  const match = (ask.channels?.includes("full_text") ?? true) ? recallMatch(sql, ask.query, counts, () => positions().highest) : null;
  if (match === null && !byMeaning) return plain;
  const room = budget - window.tokens - EXCERPT_HEADER_TOKENS;
  if (room < EXCERPT_GROUP_TOKENS) return plain;
  const { start, highest } = positions();
  const limit = Math.min(MAX_HITS, 16 + Math.ceil(room / 16));
  // The same hits either way: scored here from what FTS5 said before (a thread up to LEARNT_ROWS), else by FTS5.
  const lexical = match === null ? [] : ((highest <= LEARNT_ROWS ? scores.search(sql, match, start, limit) : null) ?? searchRecall(sql, match, start, limit));
  const near = byMeaning
    ? byMeaning(
        ask.query,
        start,
        limit,
        lexical.map((h) => h.seq),
      )
    : [];
  const fused = near.length > 0 ? fuseHits(lexical, near) : undefined;
  if (!fused && lexical.length === 0) return plain;
  const found = fused?.hits ?? lexical;
  const neighbours = Math.max(0, Math.trunc(ask.neighbours));
  const acc = rowAccess(sql, start, found, neighbours + 2, known);
  // Each hit's row (hash, time) is known now: rowAccess read the rows around every hit.
  const dated = byTime(found, namedSpan(ask.query), (seq) => known.row(seq)?.at);
  const hits = distinctHits(dated, (seq) => known.row(seq)?.hash);
  const picked = pickRecall(hits, acc, room, neighbours);
  if (picked.length === 0) return plain;
  const used = recalledCost(picked);
  // What recall left unused widens the window; recalled turns the wider window now holds are dropped as duplicates.
  const wide = recent(budget - used);
  const wideFirst = wide.messages[0];
  // The newest messages within a larger budget are a longer suffix: as many as the window's are the same ones (no look-up).
  const wideStart = wide.messages.length === window.messages.length || !wideFirst ? start : (seqOf(sql, wideFirst.id) ?? start);
  const keep = picked.filter((p) => p.seq < wideStart);
  if (keep.length === 0) return plain;
  const messages = known.decoded(
    sql,
    keep.map((p) => p.seq),
  );
  const recalled = keep.map((p) => {
    const channels = p.why === "match" ? fused?.channels.get(p.seq) : undefined;
    return { message: messages.get(p.seq)!, tokens: p.tokens, score: p.score, why: p.why, group: p.group, ...(channels ? { channels } : {}) };
  });
  return { ...wide, truncated: true, recalled, recalled_tokens: recalledCost(keep) };
}

/** A match of the live index, by message id and content hash (a branch's copy of a message matches only if unchanged). */
export type LiveHit = { id: string; hash: string; score: number };

/**
 * Recall over a message list held in memory — the whole state a run with middleware reads, or a
 * branch replayed from a checkpoint — ranked by the live index: a hit counts only when the list
 * holds that message unchanged (same id and content hash), so a branch recalls its own turns
 * (those it shares with the live rows) and never another branch's. Neighbours and tool pairs
 * are positions in the list. Same rules and budget as recallWindow.
 */
export function recallOver(
  /** The live index's best matches for a query (ThreadStore: recallMatch + searchLive). */
  search: (query: string, limit: number) => LiveHit[],
  messages: readonly Message[],
  budget: number,
  ask: RecallAsk,
  estimate: TokenEstimator = estimateTokens,
): LoadRecentResult {
  const tokens = messages.map((m) => estimate(m));
  const newest = (limit: number): number => {
    let start = messages.length;
    while (start > 0 && tokens[start - 1]! <= limit) limit -= tokens[--start]!;
    return start;
  };
  const slice = (start: number) => ({ messages: messages.slice(start), tokens: tokens.slice(start).reduce((n, t) => n + t, 0), truncated: start > 0 });
  const fullStart = newest(budget);
  const plain = { ...slice(fullStart), recalled: [], recalled_tokens: 0 };
  const share = Math.min(1, Math.max(0, ask.share));
  if (fullStart === 0 || share === 0 || searchTerms(ask.query).length === 0) return plain;
  const start = newest(Math.floor(budget * (1 - share)));
  const room = budget - tokens.slice(start).reduce((n, t) => n + t, 0) - EXCERPT_HEADER_TOKENS;
  if (room < EXCERPT_GROUP_TOKENS) return plain;
  const at = new Map(messages.map((m, i) => [m.id, i]));
  const found: RecallHit[] = [];
  const hashes = new Map<number, string>();
  for (const h of search(ask.query, 2 * MAX_HITS)) {
    const i = at.get(h.id);
    if (i !== undefined && i < start && messageHash(messages[i]!) === h.hash) {
      found.push({ seq: i, score: h.score });
      hashes.set(i, h.hash);
    }
  }
  const dated = byTime(found, namedSpan(ask.query), (i) => messages[i]?.created_at);
  const hits = distinctHits(dated, (i) => hashes.get(i));
  const row = (i: number) => (i >= 0 && i < start ? { seq: i, role: messages[i]!.role, tokens: tokens[i]! } : undefined);
  const picked = pickRecall(hits, { end: start, prev: (i) => row(i - 1), next: (i) => row(i + 1) }, room, Math.max(0, Math.trunc(ask.neighbours)));
  if (picked.length === 0) return plain;
  const wideStart = newest(budget - recalledCost(picked));
  const keep = picked.filter((p) => p.seq < wideStart);
  if (keep.length === 0) return plain;
  const recalled = keep.map((p) => ({ message: messages[p.seq]!, tokens: p.tokens, score: p.score, why: p.why, group: p.group }));
  return { ...slice(wideStart), truncated: true, recalled, recalled_tokens: recalledCost(keep) };
}
