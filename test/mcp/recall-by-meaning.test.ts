import { describe, expect, it } from "vitest";
import { OTHER, planted } from "../support/by-meaning";
import { callJson, mcpClient } from "../support/mcp-client";
import { api, createTenant } from "../support/tenants";

/**
 * The memory tools' `recall` ranks facts by words and by meaning, fused as a run ranks them
 * (D1FactsBackend.recall): MCP's, with scopes (the run's own tool, as an agent calls it) and
 * without (every scope the key's grants reach), finds facts that share no word with the query.
 */

type Recalled = {
  key: string | null;
  scope: string;
  text: string;
  score: number;
  channels: { full_text?: { rank: number }; dense?: { rank: number; score: number } };
};

async function plantFacts(key: string): Promise<void> {
  const facts = [
    ...OTHER.map((text, i) => ({ scope: "organization:acme", kind: "note", key: `o${i}`, text })),
    ...planted.map((p, i) => ({ scope: "organization:acme", kind: "note", key: `p${i}`, text: p.turn })),
  ];
  for (const body of facts) expect((await api("/v1/memory/facts", { key, body })).status).toBe(201);
}

const recall = async (key: string, args: Record<string, unknown>) => {
  const r = await callJson(await mcpClient(key), "recall", args);
  expect(r.error, r.text).toBe(false);
  return r.json!.facts as Recalled[];
};

describe("recall by meaning (MCP and the agent's memory tool)", () => {
  it("facts that share no word with the query come back in the first three, three of four, found by the dense channel", async () => {
    const t = await createTenant({ memberScopes: ["organization:*"] });
    await plantFacts(t.adminKey);
    for (const args of [{ scopes: ["organization:acme"] }, {}]) {
      for (const key of [t.adminKey, t.memberKey]) {
        const found = await Promise.all(planted.map((p) => recall(key, { query: p.question, limit: 3, ...args })));
        const hits = found.flatMap((facts, i) => facts.filter((f) => f.key === `p${i}`));
        expect(hits.length, JSON.stringify(args)).toBeGreaterThanOrEqual(3);
        for (const hit of hits) {
          expect(hit.channels.dense?.score).toBeGreaterThan(0);
          expect(hit.channels.full_text).toBeUndefined();
        }
        // Best first, 1 for the best.
        for (const facts of found.filter((f) => f.length > 0)) expect(facts[0]?.score).toBe(1);
      }
    }
  });

  it("a word match still ranks first and reports both channels that found it", async () => {
    const t = await createTenant();
    await plantFacts(t.adminKey);
    const facts = await recall(t.adminKey, { query: "is the projector flickering", scopes: ["organization:acme"] });
    expect(facts[0]).toMatchObject({ key: "o11", score: 1 });
    expect(facts[0]?.channels.full_text?.rank).toBe(1);
  });

  it("bad queries answer without an error: emoji, punctuation, unknown words, another script; past 2,000 characters a coded refusal", async () => {
    const t = await createTenant();
    await plantFacts(t.adminKey);
    const c = await mcpClient(t.adminKey);
    for (const query of ["🎉🙂", "?!...", "zzqxv blorptangle", "東京に行きました", "x".repeat(2000)]) {
      for (const args of [{ query, scopes: ["organization:acme"] }, { query }]) {
        expect((await callJson(c, "recall", args)).json, query.slice(0, 20)).toEqual({ facts: [] });
      }
    }
    const long = await callJson(c, "recall", { query: "projector ".repeat(10_000) });
    expect([long.error, long.text.slice(0, 7)]).toEqual([true, "BEM-011"]);
  });

  it("keeps to the tenant and the grants: another tenant's and an ungranted scope's facts are never found, by words or by meaning", async () => {
    const a = await createTenant({ memberScopes: ["organization:acme"] });
    const b = await createTenant();
    await plantFacts(b.adminKey);
    // Tenant A: the planted fact among other talk in a scope its member key is not granted.
    for (const text of [...OTHER, planted[3]!.turn]) {
      expect((await api("/v1/memory/facts", { key: a.adminKey, body: { scope: "organization:rival", kind: "note", text } })).status).toBe(201);
    }
    for (const p of planted) {
      expect(await recall(a.memberKey, { query: p.question })).toEqual([]);
      expect(await recall(a.memberKey, { query: `${p.question} ${p.turn}` })).toEqual([]);
    }
    const admin = await recall(a.adminKey, { query: planted[3]!.question, limit: 20 });
    expect(admin.map((f) => f.text)).toContain(planted[3]!.turn);
    expect(new Set(admin.map((f) => f.scope))).toEqual(new Set(["organization:rival"]));
  });
});
