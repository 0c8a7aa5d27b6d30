import { describe, expect, it } from "vitest";
import { api, createTenant } from "../support/tenants";

/**
 * The LoCoMo bench in miniature (bench/locomo): a long thread stored through the state API with
 * its own times, facts in a docset, and POST /v1/memory/context asked a question. The planted
 * early turn (with its answer, the next turn) and the planted fact come back for the question
 * that needs them, and not for an unrelated one.
 */

type Ctx = {
  messages: { id: string; role: string; content: string; metadata?: { fact?: unknown; recalled?: string[] } }[];
  tokens: number;
  recalled: { id: string; reason: string; score: number; tokens: number }[];
  facts: { id: string; loaded: boolean; reason: string }[];
};

const MAY_8 = Date.UTC(2023, 4, 8, 13, 56);

async function seeded() {
  const t = await createTenant();
  const thread = `rc-${crypto.randomUUID().slice(0, 8)}`;
  const docset = `docset:rc-${crypto.randomUUID().slice(0, 8)}`;
  const filler = (from: number, n: number, at: number) =>
    Array.from({ length: n }, (_, i) => ({
      role: (from + i) % 2 ? "assistant" : "user",
      content: `Chat ${from + i}: the weather stays mild and the office plants are watered.`,
      created_at: at,
    }));
  const messages = [
    ...filler(0, 6, MAY_8),
    { id: "q1", role: "user", content: "Caroline: Where did you park the blue bicycle?", created_at: MAY_8 },
    { id: "a1", role: "assistant", content: "Melanie: Behind the library, next to the old fountain.", created_at: MAY_8 },
    ...filler(6, 6, MAY_8),
    { id: "q2", role: "user", content: "Caroline: Did the plumber ever call back about the leaking boiler?", created_at: MAY_8 },
    { id: "h2", role: "assistant", content: "Melanie: Hold on, let me check my phone.", created_at: MAY_8 },
    { id: "a2", role: "assistant", content: "Melanie: Yes, she comes on Thursday at nine.", created_at: MAY_8 },
    ...filler(12, 300, Date.UTC(2023, 7, 1)),
  ];
  const put = await api(`/v1/threads/${thread}/state`, { key: t.adminKey, body: { ops: [{ op: "append", messages }] } });
  expect(put.status).toBe(200);
  const planted = await api("/v1/memory/facts", {
    key: t.adminKey,
    body: { scope: docset, kind: "observation", text: "Melanie keeps the spare key under the green flowerpot." },
  });
  const { id: factId } = (await planted.json()) as { id: string };
  // More facts than the facts share holds (600 tokens at 1,200), so the scope is ranked.
  for (let i = 0; i < 80; i++) {
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: docset, kind: "observation", text: `Caroline watered the office plants on day ${i}.` } });
  }
  const ask = async (query: string, max_tokens = 1200, channels?: string[]) =>
    (await (
      await api("/v1/memory/context", {
        key: t.adminKey,
        body: { scopes: [docset, `session:${thread}`], max_tokens, query, ...(channels ? { channels } : {}) },
      })
    ).json()) as Ctx;
  return { ask, factId };
}

describe("recall through POST /v1/memory/context", () => {
  it("a planted early turn and a planted fact come back for the question that needs them, and not for an unrelated one", async () => {
    const { ask, factId } = await seeded();
    const hit = await ask("Where is the blue bicycle parked?");
    expect(hit.recalled.map((r) => [r.id, r.reason])).toEqual(
      expect.arrayContaining([
        ["q1", "match"],
        ["a1", "neighbour"],
      ]),
    );
    // One system message of dated excerpts, before the recent turns, naming what it carries.
    const excerpt = hit.messages.find((m) => m.id === "recalled")!;
    expect(excerpt.role).toBe("system");
    expect(excerpt.metadata?.recalled).toEqual(hit.recalled.map((r) => r.id));
    expect(excerpt.content).toContain("Earlier in this conversation");
    expect(excerpt.content).toMatch(
      /\n\[2023-05-08 13:56 UTC\]\n(.+\n)*user: "Caroline: Where did you park the blue bicycle\?"\nassistant: "Melanie: Behind the library/,
    );
    const turns = hit.messages.filter((m) => !m.metadata?.fact);
    expect(turns[0]).toBe(excerpt);
    expect(turns.at(-1)?.content).toContain("Chat 311");
    expect(hit.tokens).toBeLessThanOrEqual(1200);

    const key = await ask("Where is the spare key?");
    expect(key.facts.find((f) => f.id === factId)).toMatchObject({ loaded: true, reason: "relevant" });

    // By words: nothing matches. (By meaning the nearest turns come back for any query: test/embed/by-meaning.test.ts.)
    const other = await ask("Which trains leave early on Sundays?", 1200, ["full_text"]);
    expect(other.recalled).toEqual([]);
    expect(other.messages.some((m) => m.id === "recalled" || m.id === "q1")).toBe(false);
    expect(other.facts.find((f) => f.id === factId)?.loaded ?? false).toBe(false);
  });

  it("an answer two turns after the matching one comes back by default (two turns either side of a match)", async () => {
    const { ask } = await seeded();
    // By words alone, so the match is q2 only (by meaning, the nearest turns match too).
    const hit = await ask("Did the plumber call about the boiler?", 1200, ["full_text"]);
    expect(hit.recalled.map((r) => [r.id, r.reason])).toEqual(
      expect.arrayContaining([
        ["q2", "match"],
        ["a2", "neighbour"],
      ]),
    );
  });

  it("bad queries never error, and a budget smaller than one turn still answers", async () => {
    const { ask } = await seeded();
    for (const q of ["the of and", '"*" NEAR(a b) -x a:b', "🚲 自転車", "x ".repeat(8000)]) {
      const r = await ask(q);
      expect(Array.isArray(r.recalled)).toBe(true);
    }
    const tiny = await ask("blue bicycle", 3);
    expect(tiny.messages).toEqual([]);
  });
});
