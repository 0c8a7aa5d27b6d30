import { describe, expect, it } from "vitest";
import { inJsonBatches } from "../../src/thread/json-batches";

/** The calls inJsonBatches makes for `items` under `max` characters per batch. */
function calls(items: string[], max: number) {
  const out: ({ batch: unknown[]; first: number; chars: number } | { alone: number })[] = [];
  inJsonBatches(
    items,
    (json, first) => out.push({ batch: JSON.parse(json) as unknown[], first, chars: json.length }),
    (i) => out.push({ alone: i }),
    max,
  );
  return out;
}

describe("inJsonBatches: the rows of one multi-row INSERT", () => {
  it("every item once, in order, each batch within the bound and naming its first item's index", () => {
    const items = ["1", "22", "333", "4444", "55555", "1", "22"].map((s) => JSON.stringify(s));
    const got = calls(items, 10);
    const flat: unknown[] = [];
    for (const c of got) {
      expect("batch" in c).toBe(true);
      if (!("batch" in c)) continue;
      expect(c.first).toBe(flat.length);
      // The bound counts the items' characters (the array's brackets and commas ride along).
      expect(c.chars - (c.batch.length + 1)).toBeLessThanOrEqual(10);
      flat.push(...c.batch);
    }
    expect(flat).toEqual(["1", "22", "333", "4444", "55555", "1", "22"]);
    expect(got.length).toBeGreaterThan(1);
  });

  it("an item past the bound goes alone, between the batches before and after it", () => {
    expect(calls(['"a"', '"b"', `"${"x".repeat(20)}"`, '"c"'], 10)).toEqual([
      { batch: ["a", "b"], first: 0, chars: 9 },
      { alone: 2 },
      { batch: ["c"], first: 3, chars: 5 },
    ]);
  });

  it("nothing to insert: no call", () => {
    expect(calls([], 10)).toEqual([]);
  });
});
