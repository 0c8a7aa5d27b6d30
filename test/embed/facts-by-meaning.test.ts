import { describe, expect, it } from "vitest";
import { OTHER, planted } from "../support/by-meaning";
import { api, createTenant } from "../support/tenants";

/**
 * The done-when fixture for facts (test/embed/by-meaning.test.ts has the turns'): facts that share no word with the
 * question that needs them, planted among many facts of other talk, load within a 1,000-token context as relevant by meaning,
 * with the embedded default, offline; by words alone none does.
 */

type Ctx = { facts: { id: string; loaded: boolean; reason?: string; channels?: { dense?: { score: number }; full_text?: unknown } }[] };

describe("facts by meaning within 1,000 tokens (embedded default)", () => {
  it("at least three of four planted facts load for their question, found by the dense channel; by words alone none", async () => {
    const t = await createTenant();
    const scope = `docset:fixture${crypto.randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    // Ten times the other talk (about 1,800 tokens: more than the context's facts share, so the scope is ranked), the planted facts among it.
    for (let i = 0; i < 120; i++) {
      const p = i % 30 === 5 ? planted[(i - 5) / 30] : undefined;
      const text = p ? p.turn : `${OTHER[(i * 7) % OTHER.length]} (${i})`;
      const res = await api("/v1/memory/facts", { key: t.adminKey, body: { scope, kind: "note", text } });
      expect(res.status).toBe(201);
      if (p) ids.push(((await res.json()) as { id: string }).id);
    }
    expect(ids).toHaveLength(planted.length);
    const ask = async (query: string, channels?: string[]) =>
      (
        (await (
          await api("/v1/memory/context", { key: t.adminKey, body: { scopes: [scope], max_tokens: 1000, query, ...(channels ? { channels } : {}) } })
        ).json()) as Ctx
      ).facts;
    const loaded = await Promise.all(planted.map(async (p, i) => (await ask(p.question)).find((f) => f.id === ids[i] && f.loaded)));
    const found = loaded.filter((f) => f !== undefined);
    expect(found.length).toBeGreaterThanOrEqual(3);
    for (const f of found) {
      expect(f.reason).toBe("relevant");
      expect(f.channels?.dense?.score).toBeGreaterThan(0);
      expect(f.channels?.full_text).toBeUndefined();
    }
    // By words none is relevant (the newest facts still fill what the budget leaves, whatever they say).
    const byWords = await Promise.all(
      planted.map(async (p, i) => (await ask(p.question, ["full_text"])).find((f) => f.id === ids[i] && f.reason === "relevant")),
    );
    expect(byWords.filter((f) => f !== undefined)).toEqual([]);
  });
});
