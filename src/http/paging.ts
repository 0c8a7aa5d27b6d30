import { z } from "@hono/zod-openapi";
import { cursorOf, parseCursor, type TimeIdCursor } from "../core/cursor";
import { AppError } from "../core/errors";

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

/** Where a page of `list` starts: after the previous page's last row (BEM-011 for a cursor this list did not hand out). */
export const pageStart = (list: string, cursor: string | undefined): TimeIdCursor | undefined => (cursor ? parseCursor(list, cursor) : undefined);

/** A page of `limit` rows from the `limit + 1` read (one row past the page says whether another follows), with its next_cursor. */
export function pageOf<T extends TimeIdCursor>(list: string, rows: readonly T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > limit && last ? cursorOf(list, last) : null };
}
/**
 * An OpenAI-style page over a list (`after` is the last id of the previous page). An `after` the list
 * does not hold (its item deleted meanwhile, or a typo) is BEM-011: read as "from the start" it handed
 * an auto-paging client the first page again.
 */
export function listPage<T extends { id?: unknown }>(items: T[], q: { limit?: number; order?: "asc" | "desc"; after?: string }, defaultOrder: "asc" | "desc") {
  const ordered = (q.order ?? defaultOrder) === "desc" ? [...items].reverse() : items;
  const at = q.after ? ordered.findIndex((i) => i.id === q.after) : -1;
  if (q.after && at < 0) throw new AppError("BEM-011", `after: '${q.after.slice(0, 80)}' is not an item id of this list`);
  const start = at + 1;
  const limit = q.limit ?? 20;
  const data = ordered.slice(start, start + limit);
  return {
    object: "list" as const,
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
    has_more: start + limit < ordered.length,
  };
}
