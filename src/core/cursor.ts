import { AppError } from "./errors";

/**
 * The one list cursor: a page starts after (or before) the row at (time, id). Wire form
 * "time~id" — '~' never occurs in the ids these lists page over (ids, thread ids).
 */
export type Cursor = { at: number; id: string };

export const encodeCursor = (c: Cursor): string => `${c.at}~${c.id}`;

/** A cursor this API handed out; anything else is BEM-011 naming the parameter it came in. */
export function decodeCursor(raw: string, param = "cursor"): Cursor {
  const sep = raw.indexOf("~");
  const at = Number(raw.slice(0, sep));
  if (sep < 1 || !Number.isSafeInteger(at)) throw new AppError("BEM-011", `${param}: not a cursor returned by this list`);
  return { at, id: raw.slice(sep + 1) };
}

/** Position in a list ordered by (created_at, id). */
export type TimeIdCursor = { created_at: number; id: string };

export const cursorOf = (row: TimeIdCursor): string => encodeCursor({ at: row.created_at, id: row.id });

export function parseCursor(raw: string): TimeIdCursor {
  const c = decodeCursor(raw);
  return { created_at: c.at, id: c.id };
}
