import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IdGenerator } from "../../src/core/ids";
import { parseThreadId } from "../../src/thread/thread-id";

describe("IdGenerator", () => {
  it("ids strictly increase whatever the clock does (stalls, steps back)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 45 }), { minLength: 2, maxLength: 200 }), (clock) => {
        const gen = new IdGenerator();
        const ids = clock.map((ms) => gen.next(ms));
        for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
        expect(ids.every((id) => /^[0-9A-Z]{20}$/.test(id))).toBe(true);
      }),
    );
  });

  it("continues after a restored clock instead of restarting the counter", () => {
    const a = new IdGenerator();
    const first = a.next(1000);
    const second = a.next(1000);
    const b = new IdGenerator();
    b.restore(a.clock);
    const third = b.next(1000);
    expect(first < second && second < third).toBe(true);
  });

  it("sorts by time first", () => {
    const gen = new IdGenerator();
    const early = gen.next(5);
    expect(new IdGenerator().next(6) > early).toBe(true);
  });
});

describe("parseThreadId", () => {
  it("accepts 1-128 chars of the allowed set and rejects the rest with BEM-030", () => {
    expect(parseThreadId("a")).toBe("a");
    for (const bad of [undefined, 42, "", " ", "a b", "a\nb", "x".repeat(129), "ü"]) {
      expect(() => parseThreadId(bad)).toThrowError(expect.objectContaining({ code: "BEM-030" }));
    }
  });
});
