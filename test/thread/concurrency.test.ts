import { describe, expect, it } from "vitest";
import { newThread, user } from "./support";

describe("concurrent writers", () => {
  it("200 concurrent appends: all present, none duplicated, order = acceptance order", async () => {
    const t = newThread();
    const N = 200;
    const cps = await Promise.all(Array.from({ length: N }, (_, i) => t.appendMessages([user(`c${i}`)], "input")));
    const s = await t.getState();
    const contents = s.channels.messages.map((m) => m.content);
    expect(contents).toHaveLength(N);
    expect(new Set(contents).size).toBe(N);
    expect(new Set(s.channels.messages.map((m) => m.id)).size).toBe(N);
    // Each write was accepted as one checkpoint; step order is acceptance order.
    expect(cps.map((c) => c.step).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    const accepted = [...cps].sort((a, b) => a.step - b.step).map((c) => (c.writes[0]?.op === "put" ? c.writes[0].message.content : null));
    expect(contents).toEqual(accepted);
    expect(s.step).toBe(N);
  });
});
