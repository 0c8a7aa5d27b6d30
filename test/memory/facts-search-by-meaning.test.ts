import { describe, expect, it } from "vitest";
import { OTHER, planted } from "../support/by-meaning";
import { callJson, mcpClient } from "../support/mcp-client";
import { api, createTenant } from "../support/tenants";

/**
 * `GET /v1/memory/facts?q=` ranks as the memory tools' `recall` does (D1FactsBackend.recall): words and
 * meaning fused, so a fact that shares no word with `q` is found, with the channels that found it.
 */

type Hit = {
  id: string;
  key: string | null;
  kind: string;
  text: string;
  score: number;
  channels?: { full_text?: { rank: number }; dense?: { score: number } };
};

const uid = () => crypto.randomUUID().slice(0, 8);

async function plant(key: string, scope: string): Promise<void> {
  const facts = [
    ...OTHER.map((text, i) => ({ scope, kind: "note", key: `o${i}`, text })),
    ...planted.map((p, i) => ({ scope, kind: i === 0 ? "family" : "note", key: `p${i}`, text: p.turn })),
  ];
  for (const body of facts) expect((await api("/v1/memory/facts", { key, body })).status).toBe(201);
}

const search = async (key: string, query: string): Promise<Hit[]> => {
  const res = await api(`/v1/memory/facts?${query}`, { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { facts: Hit[] }).facts;
};

describe("GET /v1/memory/facts?q= by words and meaning", () => {
  it("a fact that shares no word with q comes back, found by the dense channel, ranked as MCP recall ranks it", async () => {
    const t = await createTenant();
    const scope = `docset:meaning${uid()}`;
    await plant(t.adminKey, scope);
    const q = planted[3]!.question;
    const hits = await search(t.adminKey, `scope=${scope}&q=${encodeURIComponent(q)}&limit=3`);
    const hit = hits.find((h) => h.key === "p3");
    expect(hit, JSON.stringify(hits)).toBeDefined();
    expect(hit!.channels?.dense?.score).toBeGreaterThan(0);
    expect(hit!.channels?.full_text).toBeUndefined();
    expect(hits[0]!.score).toBe(1);
    // One code path: the search answers what the memory tools' recall answers for the same scope.
    const c = await mcpClient(t.adminKey);
    const recalled = (await callJson(c, "recall", { query: q, scopes: [scope], limit: 3 })).json!.facts as Hit[];
    await c.close();
    expect(hits.map((h) => [h.id, h.score, h.channels])).toEqual(recalled.map((h) => [h.id, h.score, h.channels]));
  });

  it("kind and key filter the facts found by meaning too", async () => {
    const t = await createTenant();
    const scope = `docset:filter${uid()}`;
    await plant(t.adminKey, scope);
    // p0 is the one fact of kind family: a filter on note leaves it out, as it leaves out every other kind.
    const q = encodeURIComponent(planted[0]!.question);
    const unfiltered = await search(t.adminKey, `scope=${scope}&q=${q}&limit=20`);
    expect(unfiltered.map((h) => h.key)).toContain("p0");
    const notes = await search(t.adminKey, `scope=${scope}&q=${q}&kind=note&limit=20`);
    expect(notes.length).toBeGreaterThan(0);
    for (const hit of notes) expect(hit.kind).toBe("note");
    const q3 = encodeURIComponent(planted[3]!.question);
    expect((await search(t.adminKey, `scope=${scope}&q=${q3}&kind=family&limit=20`)).map((h) => h.key)).not.toContain("p3");
  });
});

describe("a small set by meaning", () => {
  it("a scope holding one fact: it is found by meaning alone when close, and an unrelated one is not", async () => {
    const t = await createTenant();
    const one = `docset:one${uid()}`;
    const other = `docset:other${uid()}`;
    const sick = planted[3]!;
    expect((await api("/v1/memory/facts", { key: t.adminKey, body: { scope: one, kind: "note", text: sick.turn } })).status).toBe(201);
    expect((await api("/v1/memory/facts", { key: t.adminKey, body: { scope: other, kind: "note", text: OTHER[11]! } })).status).toBe(201);
    const q = encodeURIComponent(sick.question);
    const [hit] = await search(t.adminKey, `scope=${one}&q=${q}`);
    expect(hit?.text).toBe(sick.turn);
    expect(hit?.channels?.dense?.score).toBeGreaterThan(0);
    expect(hit?.channels?.full_text).toBeUndefined();
    expect(await search(t.adminKey, `scope=${other}&q=${q}`)).toEqual([]);
  });
});
