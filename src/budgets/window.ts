import { z } from "@hono/zod-openapi";

/** How often a budget starts again: each day, week or month from its anchor, in its time zone; null: never. */
export const BudgetWindow = z.enum(["day", "week", "month"]);
export type BudgetWindow = z.infer<typeof BudgetWindow>;

/** The terms a budget's counter works by (its object computes the window on its own clock: one clock, no race at a reset). */
export type Terms = { limit_micro: number; window: BudgetWindow | null; anchor_ms: number; time_zone: string };
/** A budget's terms with its soft thresholds: fractions of the limit that each raise an event once per window. */
export type Config = Terms & { thresholds: number[] };

/** The span a spend counts in: from `start` until `resets_at` (null: the budget never resets). */
export type Span = { start: number; resets_at: number | null };

/** An IANA time zone the runtime knows ("Europe/Paris", "UTC"). */
export const isTimeZone = (tz: string): boolean => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};

type Wall = { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number };

const formats = new Map<string, Intl.DateTimeFormat>();
function wallClock(ms: number, tz: string): Wall {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formats.set(tz, f);
  }
  const part = (type: string) => Number(f.formatToParts(ms).find((p) => p.type === type)?.value ?? 0);
  return { y: part("year"), mo: part("month"), d: part("day"), h: part("hour"), mi: part("minute"), s: part("second"), ms: ms % 1000 };
}

const asUtc = (w: Wall) => Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s, w.ms);

/** The instant the wall clock of `tz` reads `w` (twice corrected, for the offset at that instant). */
function instantOf(w: Wall, tz: string): number {
  let guess = asUtc(w);
  for (let i = 0; i < 2; i++) guess = asUtc(w) - (asUtc(wallClock(guess, tz)) - guess);
  return guess;
}

const daysIn = (y: number, mo: number) => new Date(Date.UTC(y, mo, 0)).getUTCDate();

/** The k-th window start after the anchor: whole local days, weeks or calendar months (the 31st is the month's last day in shorter months). */
function startOf(anchor: Wall, window: BudgetWindow, k: number, tz: string): number {
  if (window === "month") {
    const months = anchor.mo - 1 + k;
    const y = anchor.y + Math.floor(months / 12);
    const mo = (((months % 12) + 12) % 12) + 1;
    return instantOf({ ...anchor, y, mo, d: Math.min(anchor.d, daysIn(y, mo)) }, tz);
  }
  const day = new Date(Date.UTC(anchor.y, anchor.mo - 1, anchor.d + k * (window === "week" ? 7 : 1)));
  return instantOf({ ...anchor, y: day.getUTCFullYear(), mo: day.getUTCMonth() + 1, d: day.getUTCDate() }, tz);
}

const APPROX_MS: Record<BudgetWindow, number> = { day: 86_400_000, week: 7 * 86_400_000, month: 30.44 * 86_400_000 };

/** The window `now` falls in. Before the anchor (refused when set) counts as the first window. */
export function spanAt(t: Pick<Terms, "window" | "anchor_ms" | "time_zone">, now: number): Span {
  if (t.window === null) return { start: 0, resets_at: null };
  const anchor = wallClock(t.anchor_ms, t.time_zone);
  let k = Math.max(0, Math.floor((now - t.anchor_ms) / APPROX_MS[t.window]));
  while (k > 0 && startOf(anchor, t.window, k, t.time_zone) > now) k--;
  while (startOf(anchor, t.window, k + 1, t.time_zone) <= now) k++;
  return { start: startOf(anchor, t.window, k, t.time_zone), resets_at: startOf(anchor, t.window, k + 1, t.time_zone) };
}
