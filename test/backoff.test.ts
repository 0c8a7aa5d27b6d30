import { describe, expect, it } from "vitest";
import { backoff } from "../src/backoff";

describe("backoff: one rule for the three retry loops", () => {
  it("doubles from base, caps at max, and jitter only ever takes off up to 20%", () => {
    expect([0, 1, 2, 3, 4].map((r) => backoff(r, { base: 200, max: 2000, random: () => 0 }))).toEqual([200, 400, 800, 1600, 2000]);
    expect([0, 1, 4].map((r) => backoff(r, { base: 200, max: 2000, random: () => 1 }))).toEqual([160, 320, 1600]);
    for (let i = 0; i < 200; i++) {
      const d = backoff(3, { base: 10, max: 300 });
      expect(d).toBeGreaterThanOrEqual(64);
      expect(d).toBeLessThanOrEqual(80);
    }
  });
});
