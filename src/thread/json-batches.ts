/** Characters of JSON per multi-row INSERT: at most 3 UTF-8 bytes each, well under SQLite's 2 MB per string in production. */
export const INSERT_BATCH_CHARS = 600_000;

/**
 * Rows for a multi-row `INSERT … SELECT … FROM json_each(?)`: `items` (each row's values as JSON)
 * go to `batch` as JSON arrays of up to `maxChars` characters, in order, with the index of each
 * array's first item; an item larger than that goes to `alone` (one row, its values bound).
 * One statement per write rather than one per row: the recall index's triggers flush their terms
 * once per statement (1,000 single-row inserts 43 ms against 9.8 ms for one 1,000-row insert), and
 * every statement has its own cost in the object. A statement binds at most 100 values, so the rows
 * travel as one JSON text; SQLite in production takes no string over 2 MB (workerd does not enforce
 * it locally), hence the bound.
 */
export function inJsonBatches(
  items: readonly string[],
  batch: (json: string, first: number) => void,
  alone: (index: number) => void,
  maxChars = INSERT_BATCH_CHARS,
): void {
  let from = 0;
  let chars = 0;
  const send = (to: number) => {
    if (to > from) batch(`[${items.slice(from, to).join(",")}]`, from);
    from = to;
    chars = 0;
  };
  items.forEach((item, i) => {
    if (item.length > maxChars) {
      send(i);
      alone(i);
      from = i + 1;
      return;
    }
    if (chars + item.length > maxChars) send(i);
    chars += item.length;
  });
  send(items.length);
}
