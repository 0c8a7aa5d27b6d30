import { describe, expect, it } from "vitest";
import { cell, pairCell } from "../../bench/locomo/cells";

/**
 * The LoCoMo bench's table cells (bench/locomo/run.ts): a channel the run did not measure (the facts' words-only and
 * meaning-only columns without LOCOMO_FACT_CHANNELS=1) prints "—", never NaN; a measured one its mean to three places.
 */
describe("LoCoMo bench cells", () => {
  it("the mean of what was measured, to three places", () => {
    expect(cell([1, 0, 1, 1])).toBe("0.750");
    expect(
      pairCell([
        { any: 1, all: 0 },
        { any: 1, all: 1 },
      ]),
    ).toBe("1.000 / 0.500");
  });

  it("a channel not measured prints —", () => {
    expect(cell([])).toBe("—");
    expect(cell([undefined, undefined])).toBe("—");
    expect(pairCell([undefined, undefined])).toBe("—");
    expect(pairCell([])).toBe("—");
  });
});
