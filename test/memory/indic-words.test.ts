import { describe, expect, it } from "vitest";
import { api, createTenant } from "../support/tenants";

/**
 * Devanagari and Tamil words hold vowel signs and viramas (Unicode marks, category M). FTS5's unicode61
 * tokenizer took only letters and digits as word characters, so हिन्दी was indexed as ह / न / द and a
 * search for the word found nothing by its words: facts (D1 facts_fts) and a thread's recall (its object's
 * recall_fts) alike.
 */

type Hit = { id: string; channels?: { full_text?: { rank: number } } };

const HINDI = "रवि को हिन्दी संगीत बहुत पसंद है";
const TAMIL = "மீனா தமிழ் கவிதைகள் எழுதுகிறாள்";

describe("words with vowel signs are words", () => {
  it("a Hindi and a Tamil fact are found by a word of theirs, by full text", async () => {
    const t = await createTenant();
    const scope = `organization:indic-${crypto.randomUUID().slice(0, 8)}`;
    const ids: Record<string, string> = {};
    for (const [name, text] of [
      ["hindi", HINDI],
      ["tamil", TAMIL],
      ["english", "Ravi likes jazz records from the seventies."],
    ]) {
      const res = await api("/v1/memory/facts", { key: t.adminKey, body: { scope, kind: "note", text } });
      expect(res.status).toBe(201);
      ids[name!] = ((await res.json()) as { id: string }).id;
    }
    for (const [word, id] of [
      ["हिन्दी", ids.hindi],
      ["संगीत", ids.hindi],
      ["தமிழ்", ids.tamil],
      ["கவிதைகள்", ids.tamil],
    ]) {
      const res = await api(`/v1/memory/facts?scope=${scope}&q=${encodeURIComponent(word!)}`, { key: t.adminKey });
      expect(res.status).toBe(200);
      const { facts } = (await res.json()) as { facts: Hit[] };
      const words = facts.filter((f) => f.channels?.full_text);
      expect(
        words.map((f) => f.id),
        word,
      ).toEqual([id]);
    }
    // A word's lone first letter is no longer a word of it.
    const lone = (await (await api(`/v1/memory/facts?scope=${scope}&q=${encodeURIComponent("ह")}`, { key: t.adminKey })).json()) as { facts: Hit[] };
    expect(lone.facts.filter((f) => f.channels?.full_text)).toEqual([]);
  });

  it("an early Hindi turn is recalled by a word of it", async () => {
    const t = await createTenant();
    const thread = `indic-${crypto.randomUUID().slice(0, 8)}`;
    const filler = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ role: (from + i) % 2 ? "assistant" : "user", content: `Chat ${from + i}: the office plants are watered.` }));
    const messages = [
      ...filler(0, 4),
      { id: "hi1", role: "user", content: `मुझे याद रखना: ${HINDI}` },
      { id: "hi2", role: "assistant", content: "ठीक है।" },
      ...filler(4, 300),
    ];
    const put = await api(`/v1/threads/${thread}/state`, { key: t.adminKey, body: { ops: [{ op: "append", messages }] } });
    expect(put.status).toBe(200);
    const res = await api("/v1/memory/context", {
      key: t.adminKey,
      body: { scopes: [`session:${thread}`], max_tokens: 1200, query: "हिन्दी", channels: ["full_text"] },
    });
    expect(res.status).toBe(200);
    const ctx = (await res.json()) as { recalled: { id: string; reason: string }[] };
    expect(ctx.recalled.map((r) => [r.id, r.reason])).toContainEqual(["hi1", "match"]);
  });
});
