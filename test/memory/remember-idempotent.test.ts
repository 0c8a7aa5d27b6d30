import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { hashOlderFacts } from "../../src/memory/fact-backfill";
import { MemoryScope } from "../../src/memory/scope";
import { callJson, mcpClient } from "../support/mcp-client";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/**
 * Issue 36: the same fact twice (a rerun example) was stored twice and loaded twice. Remembering the same
 * text (case and spacing aside) in the same scope without a key now returns the fact already there, on every
 * path that remembers: POST /v1/memory/facts, MCP `remember`, the agent's `remember` tool, extraction.
 */
const tenant = tenantForRuns();
const rows = async (tenantId: string, scope: string) =>
  (
    await env.DB.prepare("SELECT id, text, expires_at FROM facts WHERE tenant_id = ? AND scope = ? ORDER BY created_at")
      .bind(tenantId, scope)
      .all<{ id: string; text: string; expires_at: number | null }>()
  ).results;
const scope = () => `docset:idem-${crypto.randomUUID().slice(0, 8)}`;

describe("remembering the same text in the same scope is idempotent", () => {
  it("POST /v1/memory/facts: the second time answers 200 with the first fact, and the scope loads it once", async () => {
    const t = tenant();
    const s = scope();
    const post = (text: string, extra: Record<string, unknown> = {}) =>
      api("/v1/memory/facts", { key: t.adminKey, body: { scope: s, kind: "style", text, ...extra } });
    const first = await post("Use short sentences.");
    expect(first.status).toBe(201);
    const a = await first.json<{ id: string; existing: boolean }>();
    expect(a.existing).toBe(false);
    const again = await post("  use SHORT   sentences. ");
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: a.id, existing: true, replaced: false });
    expect((await rows(t.tenant, s)).map((r) => r.text)).toEqual(["Use short sentences."]);
    const loaded = await api("/v1/memory/context", { key: t.adminKey, body: { scopes: [s], max_tokens: 500 } });
    expect(JSON.stringify(await loaded.json()).match(/short sentences/gi)).toHaveLength(1);
    // Another scope, or another text, is another fact; a keyed fact is addressed by its key, not its text.
    expect((await post("Use short sentences!")).status).toBe(201);
    expect((await post("Use short sentences.", { key: "style" })).status).toBe(201);
    expect(await rows(t.tenant, s)).toHaveLength(3);
  });

  it("an expiring copy takes the later expiry; an expired one is replaced by a new fact, never revived", async () => {
    const t = tenant();
    const s = MemoryScope.parse(scope());
    const store = new D1FactsBackend(env.DB, t.tenant);
    const a = await store.remember(s, "note", "Tea at four.", { expiresAt: 10_000, now: 1_000 });
    const b = await store.remember(s, "note", "Tea at four.", { expiresAt: 20_000, now: 2_000 });
    expect(b).toMatchObject({ id: a.id, existing: true, expires_at: 20_000 });
    expect((await store.remember(s, "note", "Tea at four.", { now: 3_000 })).expires_at).toBeNull();
    const c = await store.remember(s, "note", "Biscuits.", { expiresAt: 5_000, now: 1_000 });
    const d = await store.remember(s, "note", "Biscuits.", { now: 6_000 });
    expect(d.id).not.toBe(c.id);
    expect(d.existing).toBe(false);
    expect((await rows(t.tenant, s.toString())).map((r) => r.text)).toEqual(["Tea at four.", "Biscuits."]);
  });

  it("MCP remember and the agent's remember tool return the fact already there", async () => {
    const t = tenant();
    const s = scope();
    const mcp = await mcpClient(t.adminKey);
    const first = await callJson(mcp, "remember", { scope: s, kind: "note", text: "The office is in Bern." });
    const second = await callJson(mcp, "remember", { scope: s, kind: "note", text: "The office is in Bern." });
    expect(second.json).toMatchObject({ id: first.json!.id, existing: true });
    await mcp.close();

    fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_r", name: "remember", arguments: { scope: s, kind: "note", text: "the office is in bern." } }] })
      .reply("Noted.");
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: {
        model: "gpt-4o-mini",
        agent: "memory-assistant",
        thread_id: uniqueThread(),
        memory_scopes: [s],
        messages: [{ role: "user", content: "Note it." }],
      },
    });
    expect(res.status).toBe(200);
    expect(await rows(t.tenant, s)).toHaveLength(1);
  });

  it("facts written before the text hash get it from the hourly purge, their copies dropped; then they dedupe too", async () => {
    const t = tenant();
    const s = scope();
    const insert = env.DB.prepare(
      "INSERT INTO facts (id, tenant_id, scope, kind, text, tokens, created_at, updated_at, version) VALUES (?, ?, ?, 'note', ?, 3, ?, ?, 1)",
    );
    await env.DB.batch(["Old fact.", "old  FACT.", "Another old fact."].map((text, i) => insert.bind(`old-${s}-${i}`, t.tenant, s, text, i, i)));
    // Other test files' raw rows share the database: run the batches until nothing is left unhashed.
    let duplicates = 0;
    for (let r = await hashOlderFacts(env.DB); r.hashed + r.duplicates > 0; r = await hashOlderFacts(env.DB)) duplicates += r.duplicates;
    expect(duplicates).toBeGreaterThanOrEqual(1);
    expect((await rows(t.tenant, s)).map((f) => f.text)).toEqual(["Old fact.", "Another old fact."]);
    const again = await new D1FactsBackend(env.DB, t.tenant).remember(MemoryScope.parse(s), "note", "old fact.");
    expect(again).toMatchObject({ id: `old-${s}-0`, existing: true });
  });
});
