/**
 * The one backoff rule for retries (provider calls, queue tasks, webhook callbacks):
 * `base · 2^retry`, capped at `max` (any unit), less up to 20% at random, so callers that
 * failed together do not all retry in the same instant.
 * `retry` counts from 0 (the wait before the first retry is about `base`).
 */
export function backoff(retry: number, { base, max, random = Math.random }: { base: number; max: number; random?: () => number }): number {
  const full = Math.min(max, base * 2 ** Math.max(0, retry));
  return Math.round(full * (1 - 0.2 * random()));
}
