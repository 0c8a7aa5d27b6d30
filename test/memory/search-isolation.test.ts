import { describe, expect, it } from "vitest";
import { callJson, mcpClient } from "../support/mcp-client";
import { api, createTenant } from "../support/tenants";

// Fact search scores, hit order and which facts a ranked scope loads must depend only on facts the
// caller may read: facts_fts is one FTS5 index for every tenant, and its bm25() counted all of them.

const uid = () => crypto.randomUUID().slice(0, 8);
type Hit = { id: string; text: string; score: number };
type Report = { id: string; loaded: boolean; reason?: string; score?: number };

async function remember(key: string, scope: string, text: string): Promise<void> {
  const res = await api("/v1/memory/facts", { key, body: { scope, kind: "note", text } });
  expect(res.status).toBe(201);
}

/** What every search surface answers the key for `query` over `scope` (the ranked context with a budget it cannot fit whole). */
async function everySurface(key: string, scope: string, query: string) {
  const http = ((await (await api(`/v1/memory/facts?scope=${scope}&q=${encodeURIComponent(query)}`, { key })).json()) as { facts: Hit[] }).facts;
  const ctx = (await (await api("/v1/memory/context", { key, body: { scopes: [scope], max_tokens: 70, query } })).json()) as { facts: Report[] };
  const c = await mcpClient(key);
  const scoped = (await callJson(c, "recall", { query, scopes: [scope] })).json!.facts as Hit[];
  const granted = (await callJson(c, "recall", { query })).json!.facts as Hit[];
  await c.close();
  const hits = (h: Hit[]) => h.map((f) => [f.text, f.score]);
  return {
    http: hits(http),
    context: ctx.facts.map((f) => [f.id, f.loaded, f.reason, f.score]),
    recall: hits(scoped),
    recallGranted: hits(granted),
  };
}

describe("fact search ranks by the searched facts only", () => {
  it("another tenant's facts, and the tenant's own scopes the key cannot read, change no score, order or load", async () => {
    const w1 = `zebulon${uid()}`;
    const w2 = `quixotic${uid()}`;
    const scope = `docset:iso${uid()}`;
    const other = `docset:hidden${uid()}`;
    const a = await createTenant({ memberScopes: [scope] });
    const b = await createTenant();
    await remember(a.adminKey, scope, `${w1} report`);
    await remember(a.adminKey, scope, `${w2} report`);
    for (let i = 0; i < 12; i++) await remember(a.adminKey, scope, `Routine status update number ${i} about the weekly office plants.`);
    const query = `${w1} ${w2}`;

    const before = await everySurface(a.memberKey, scope, query);
    // Two facts of the same length, each holding one query word once: they score alike.
    expect(before.http).toEqual([
      [expect.any(String), 1],
      [expect.any(String), 1],
    ]);
    expect(before.context.filter((f) => f[2] === "relevant")).toHaveLength(2);
    expect(before.recall).toEqual(before.http);
    expect(before.recallGranted).toEqual(before.http);

    // Tenant B fills the same scope name with one of the words; tenant A fills a scope the member key cannot read.
    for (let i = 0; i < 5; i++) await remember(b.adminKey, scope, `${w2} note ${i}`);
    for (let i = 0; i < 5; i++) await remember(b.adminKey, `docset:b${i}`, `${w2} ${w2} elsewhere ${i}`);
    for (let i = 0; i < 5; i++) await remember(a.adminKey, other, `${w2} hidden ${i}`);
    expect(await everySurface(a.memberKey, scope, query)).toEqual(before);
    // The admin key searching the one scope is not moved by the tenant's other scopes (its unscoped recall reads them all).
    const adminBefore = await everySurface(a.adminKey, scope, query);
    for (let i = 0; i < 5; i++) await remember(a.adminKey, other, `${w1} ${w1} more ${i}`);
    expect(await everySurface(a.adminKey, scope, query)).toEqual({ ...adminBefore, recallGranted: expect.anything() });
  });

  it("a query of many words is searched word by word (it was one FTS5 MATCH per word in a compound SELECT, which D1 caps at 5)", async () => {
    const scope = `docset:many${uid()}`;
    const t = await createTenant({ memberScopes: [scope] });
    const words = Array.from({ length: 30 }, (_, i) => `w${i}x${uid()}`);
    await remember(t.adminKey, scope, `${words[29]} last`);
    await remember(t.adminKey, scope, `${words[0]} ${words[1]} first`);
    const surfaces = await everySurface(t.memberKey, scope, words.join(" "));
    // Only the first 24 words are searched (MAX_TERMS): the fact holding the 30th is no hit.
    expect(surfaces.http).toEqual([[`${words[0]} ${words[1]} first`, 1]]);
    expect(surfaces.recall).toEqual(surfaces.http);
  });
});
