import { AppError } from "../errors";

/**
 * Facts are read through D1's Sessions API, so a nearby read replica may serve them.
 * A replica can lag the primary; a bookmark names a point in the database's history,
 * and a session started from it reads nothing older. Fact writes answer theirs in
 * this header; a run (or read) that sends it back is served at least that fresh.
 */
export const BOOKMARK_HEADER = "X-Edgeweave-Bookmark";

/** D1 bookmarks are opaque but short printable strings; anything else is refused before it reaches D1. */
const SHAPE = /^[0-9A-Za-z._:-]{1,200}$/;

export function parseBookmark(raw: string | undefined | null): string | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (!SHAPE.test(raw)) throw new AppError("BEM-160");
  return raw;
}

/**
 * The later of two bookmarks. D1 bookmarks are fixed-width hexadecimal positions in the
 * database's history followed by a hash (e.g. `00000085-00000006-00005011-…`), so their
 * string order is their commit order.
 */
export function newerBookmark(a: string | null | undefined, b: string | null | undefined): string | undefined {
  if (!a) return b ?? undefined;
  if (!b) return a;
  return a >= b ? a : b;
}

/** A facts session: from `bookmark` when given (reads at least that fresh), else from the nearest copy. */
export function factsSession(db: D1Database, bookmark: string | undefined): D1DatabaseSession {
  return db.withSession(bookmark ?? "first-unconstrained");
}
