import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PROPERTY_SEED } from "./support/property-seed";

describe("property tests run with a fixed seed", () => {
  it("the global fast-check configuration names the seed, so a run can be repeated exactly", () => {
    expect(fc.readConfigureGlobal().seed).toBe(PROPERTY_SEED);
    const draw = () => fc.sample(fc.array(fc.integer(), { maxLength: 8 }), 5);
    expect(draw()).toEqual(draw());
  });
});
