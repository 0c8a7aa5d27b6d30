/** A stand-in for the rate-limit binding that counts every check per key and allows the first `allow`. */
export function countingLimiter(allow = Number.POSITIVE_INFINITY) {
  const counts = new Map<string, number>();
  const limiter = {
    limit: async ({ key }: { key: string }) => {
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      return { success: n <= allow };
    },
  };
  return { limiter: limiter as unknown as RateLimit, counts };
}
