/** The LoCoMo bench's table cells (run.ts): means of what was measured; "—" for a channel the run did not measure, never NaN. */

export type Score = { any: number; all: number };

const NOT_MEASURED = "—";

/** The mean of the measured values, to three places. */
export function cell(values: readonly (number | undefined)[]): string {
  const measured = values.filter((v): v is number => v !== undefined);
  return measured.length === 0 ? NOT_MEASURED : (measured.reduce((a, b) => a + b, 0) / measured.length).toFixed(3);
}

/** recall_any / recall_all of the measured scores. */
export function pairCell(scores: readonly (Score | undefined)[]): string {
  const measured = scores.filter((s): s is Score => s !== undefined);
  if (measured.length === 0) return NOT_MEASURED;
  return `${cell(measured.map((s) => s.any))} / ${cell(measured.map((s) => s.all))}`;
}
