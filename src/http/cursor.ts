import { AppError } from "../core/errors";

/** Position in a list ordered by (created_at, id): the row a page starts after (or before). */
export type TimeIdCursor = { created_at: number; id: string };

// Wire form "created_at~id": '~' never occurs in the ids these lists page over.
export const cursorOf = (row: TimeIdCursor) => `${row.created_at}~${row.id}`;

/** A cursor this API handed out; anything else is BEM-011. */
export function parseCursor(raw: string): TimeIdCursor {
  const at = raw.indexOf("~");
  const created_at = Number(raw.slice(0, at));
  if (at < 1 || !Number.isSafeInteger(created_at)) throw new AppError("BEM-011", "cursor: not a cursor returned by this list");
  return { created_at, id: raw.slice(at + 1) };
}
