import type { RecallHit } from "./recall-index";

/**
 * Recall by time (docs/concepts/recall.md): an input that names a date — "on 1 May, 2022",
 * "May 1 2022", "in July 2022", "in June" — prefers the earlier turns said then. Words and meaning
 * cannot see a date: a turn says "last night", its time is its `created_at`. A matching turn said
 * within the named day or month, or in the week after it (what is said about a day is often said in
 * the days after), scores TIME_BOOST more; the others keep their score, so a wrong date costs little.
 */

/** A hit said within the named time scores (1 + TIME_BOOST) times its own (measured on LoCoMo: bench/README.md). */
export const TIME_BOOST = 1;
const DAY = 86_400_000;
/** What is said about a date is often said in the days after it ("last week"). */
const AFTER = 7 * DAY;

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const MONTH = MONTHS.join("|");
const ORD = "(?:st|nd|rd|th)?";
/** "1 May, 2022" / "1st of May 2022", "May 1, 2022", "May 2022", "in May": day and year optional, a bare month only after "in" or "during". */
const NAMED = new RegExp(
  `\\b(?:(\\d{1,2})${ORD}\\s+(?:of\\s+)?(${MONTH})|(${MONTH})\\s+(\\d{1,2})${ORD}\\b|(${MONTH})(?=,?\\s+\\d{4})|(?:in|during)\\s+(${MONTH}))\\b(?:,?\\s+(\\d{4}))?`,
  "i",
);

/** A span of time an input names: [from, to) in ms, or within every year when it names none. */
export type NamedSpan = { from: number; to: number; everyYear: boolean };

/** The first date an input names, as a span (a day, or a month); undefined when it names none. */
export function namedSpan(text: string): NamedSpan | undefined {
  const m = NAMED.exec(text.length > 4096 ? text.slice(0, 4096) : text);
  if (!m) return undefined;
  const month = MONTHS.indexOf((m[2] ?? m[3] ?? m[5] ?? m[6])!.toLowerCase());
  const day = Number(m[1] ?? m[4] ?? 0);
  if (day > 31) return undefined;
  const everyYear = m[7] === undefined;
  // Without a year, a leap year, so that 29 February is a day.
  const year = everyYear ? 2000 : Number(m[7]);
  const from = day > 0 ? Date.UTC(year, month, day) : Date.UTC(year, month, 1);
  return { from, to: day > 0 ? from + DAY : Date.UTC(year, month + 1, 1), everyYear };
}

/** Whether a turn said at `at` (ms) falls in the span or the week after it. */
export function saidWithin(span: NamedSpan, at: number): boolean {
  let t = at;
  if (span.everyYear) {
    const d = new Date(at);
    t = Date.UTC(2000, d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
  }
  return t >= span.from && t < span.to + AFTER;
}

/** The hits with those said within `span` scoring TIME_BOOST more, best first (stable: equal scores keep their order). */
export function byTime(hits: readonly RecallHit[], span: NamedSpan | undefined, atOf: (seq: number) => number | undefined): readonly RecallHit[] {
  if (!span) return hits;
  return hits
    .map((h) => {
      const at = atOf(h.seq);
      return at !== undefined && saidWithin(span, at) ? { seq: h.seq, score: h.score * (1 + TIME_BOOST) } : h;
    })
    .sort((a, b) => b.score - a.score);
}
