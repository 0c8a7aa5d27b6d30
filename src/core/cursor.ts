import { AppError } from "./errors";

/**
 * The one list cursor: a page starts after (or before) the row at (time, id). Wire form
 * "time~id~check" — '~' never occurs in the ids these lists page over (ids, thread ids).
 */
export type Cursor = { at: number; id: string };

/**
 * A check of the list a cursor pages and its position (FNV-1a, 32 bits). Not a secret and not a
 * grant (a page is always read with the key's own grants): it tells a cursor this API issued for
 * this list from one it never did (made up, edited, truncated, another list's), which had been
 * answered with whatever sorted after it, often an empty page.
 */
function check(list: string, payload: string): string {
  let h = 0x811c9dc5;
  for (const ch of `${list}\n${payload}`) h = Math.imul(h ^ (ch.codePointAt(0) ?? 0), 0x01000193) >>> 0;
  return h.toString(36);
}

/** `payload` with the check of `list` appended: what a list hands out. */
export const sealCursor = (list: string, payload: string): string => `${payload}~${check(list, payload)}`;

/** The payload of a cursor `list` handed out; anything else is BEM-011 naming the parameter it came in. */
export function openCursor(list: string, raw: string, param: string): string {
  const sep = raw.lastIndexOf("~");
  const payload = raw.slice(0, Math.max(sep, 0));
  if (sep < 0 || raw.slice(sep + 1) !== check(list, payload)) throw new AppError("BEM-011", `${param}: not a cursor returned by this list`);
  return payload;
}

export const encodeCursor = (list: string, c: Cursor): string => sealCursor(list, `${c.at}~${c.id}`);

/** A cursor `list` handed out; anything else is BEM-011 naming the parameter it came in. */
export function decodeCursor(list: string, raw: string, param = "cursor"): Cursor {
  const payload = openCursor(list, raw, param);
  const sep = payload.indexOf("~");
  const at = Number(payload.slice(0, sep));
  if (sep < 1 || !Number.isSafeInteger(at)) throw new AppError("BEM-011", `${param}: not a cursor returned by this list`);
  return { at, id: payload.slice(sep + 1) };
}

/** Position in a list ordered by (created_at, id). */
export type TimeIdCursor = { created_at: number; id: string };

export const cursorOf = (list: string, row: TimeIdCursor): string => encodeCursor(list, { at: row.created_at, id: row.id });

export function parseCursor(list: string, raw: string): TimeIdCursor {
  const c = decodeCursor(list, raw);
  return { created_at: c.at, id: c.id };
}
