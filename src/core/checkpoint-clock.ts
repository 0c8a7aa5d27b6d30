/**
 * The clock inside LangGraph's checkpoint ids. LangGraph (JS and Python) writes UUID v6 of the
 * moment (time fields first, so string order is time order), and a namespace's newest checkpoint
 * is its highest id. Both the route (ids ahead of the clock) and the thread's object (ids below
 * the newest) read the same clock from here.
 */

/** 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch. */
const UUID_EPOCH_OFFSET = 0x01b21dd213814000n;

/**
 * How far two clocks may disagree: a client's ahead of the server's, or one of an app's machines
 * behind another that wrote the namespace's newest checkpoint (the webhook replay window's 5 minutes).
 */
export const CHECKPOINT_CLOCK_SKEW_MS = 5 * 60_000;

/** The leading time fields of a UUID v6 at `ms`: every v6 id written by then sorts below it. */
export function uuid6Prefix(ms: number): string {
  const ticks = BigInt(Math.floor(ms)) * 10000n + UUID_EPOCH_OFFSET;
  const hex = (v: bigint, n: number) => v.toString(16).padStart(n, "0");
  return `${hex(ticks >> 28n, 8)}-${hex((ticks >> 12n) & 0xffffn, 4)}-6${hex(ticks & 0xfffn, 3)}`;
}

/** Lowercase, as LangGraph writes them: upper-case hex would sort apart from the same time in lower case. */
const TIME_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[67][0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The UUID version (6 or 7) and Unix milliseconds of a time-ordered id; undefined for another id. */
export function checkpointIdClock(id: string): { version: 6 | 7; ms: number } | undefined {
  if (!TIME_UUID.test(id)) return undefined;
  const hex = id.replaceAll("-", "");
  if (hex[12] === "7") return { version: 7, ms: Number.parseInt(hex.slice(0, 12), 16) };
  const ticks = BigInt(`0x${hex.slice(0, 12)}${hex.slice(13, 16)}`);
  return { version: 6, ms: Number((ticks - UUID_EPOCH_OFFSET) / 10000n) };
}
