import { z } from "@hono/zod-openapi";
import { cursorOf, parseCursor, type TimeIdCursor } from "../core/cursor";

/** The query fields of a list paged in (created_at, id) order: `limit` up to `max`, and the previous page's `next_cursor`. */
export const pageQuery = (what: string, max: number, fallback: number) => ({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(max)
    .optional()
    .openapi({ description: `${what} per page (default ${fallback})` }),
  cursor: z.string().max(200).optional().openapi({ description: "next_cursor of the previous page" }),
});

/** Where a page starts: after the previous page's last row (BEM-011 for a cursor this API did not hand out). */
export const pageStart = (cursor: string | undefined): TimeIdCursor | undefined => (cursor ? parseCursor(cursor) : undefined);

/** A page of `limit` rows from the `limit + 1` read (one row past the page says whether another follows), with its next_cursor. */
export function pageOf<T extends TimeIdCursor>(rows: readonly T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > limit && last ? cursorOf(last) : null };
}
