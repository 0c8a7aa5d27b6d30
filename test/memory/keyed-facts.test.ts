import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { MemoryScope } from "../../src/memory/scope";
import { callJson, mcpClient } from "../support/mcp-client";
import { api, createTenant } from "../support/tenants";

type Err = { error: { code: string; message: string } };
type FactOut = {
  id: string;
  scope: string;
  kind: string;
  text: string;
  key: string | null;
  expires_at: number | null;
  version: number;
  replaced?: boolean;
  score?: number;
};
const uid = () => crypto.randomUUID().slice(0, 8);
const remember = (key: string, body: Record<string, unknown>) => api("/v1/memory/facts", { key, body });
const list = async (key: string, query: string) => {
  const res = await api(`/v1/memory/facts?${query}`, { key });
  return { status: res.status, body: (await res.json()) as { facts: FactOut[] } & Err };
};
const rows = async (sql: string, ...args: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...args)
      .all<Record<string, unknown>>()
  ).results;

describe("keyed facts", () => {
  it("remembering with an existing key replaces the text in place; the old text is in the history", async () => {
    const t = await createTenant();
    const scope = `user:u-${uid()}`;
    const first = await remember(t.adminKey, { scope, kind: "profile", key: "home-city", text: "Lives in Lisbon." });
    expect(first.status).toBe(201);
    const a = (await first.json()) as FactOut;
    expect(a).toMatchObject({ scope, kind: "profile", key: "home-city", version: 1, replaced: false, expires_at: null });
    expect("text" in a).toBe(false);

    const second = await remember(t.adminKey, { scope, kind: "profile", key: "home-city", text: "Moved to Berlin." });
    const b = (await second.json()) as FactOut;
    expect(b).toMatchObject({ id: a.id, version: 2, replaced: true });
    await remember(t.adminKey, { scope, kind: "profile", key: "other", text: "Likes tea." });

    const listed = await list(t.adminKey, `scope=${scope}`);
    expect(listed.body.facts.map((f) => f.text)).toEqual(["Moved to Berlin.", "Likes tea."]);
    const byKey = await list(t.adminKey, `scope=${scope}&key=home-city`);
    expect(byKey.body.facts.map((f) => f.id)).toEqual([a.id]);

    const h = await api(`/v1/memory/facts/${a.id}/history`, { key: t.adminKey });
    expect(h.status).toBe(200);
    const history = (await h.json()) as { fact: FactOut; versions: { version: number; text: string }[] };
    expect(history.fact).toMatchObject({ id: a.id, text: "Moved to Berlin.", version: 2 });
    expect(history.versions.map((v) => [v.version, v.text])).toEqual([[1, "Lives in Lisbon."]]);

    // The same key in another scope is another fact.
    const elsewhere = (await (await remember(t.adminKey, { scope: `${scope}x`, kind: "profile", key: "home-city", text: "Porto." })).json()) as FactOut;
    expect(elsewhere.id).not.toBe(a.id);
  });

  it("concurrent writers of one key leave one fact, with every earlier text in its history", async () => {
    const t = await createTenant();
    const scope = `user:u-${uid()}`;
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => remember(t.adminKey, { scope, kind: "note", key: "k", text: `text ${i}` })));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    const [fact, ...more] = (await list(t.adminKey, `scope=${scope}`)).body.facts;
    expect(more).toEqual([]);
    expect(fact!.version).toBe(8);
    const history = (await (await api(`/v1/memory/facts/${fact!.id}/history`, { key: t.adminKey })).json()) as { versions: unknown[] };
    expect(history.versions).toHaveLength(7);
  });

  it("bad keys and expiries are coded 400s and store nothing", async () => {
    const t = await createTenant();
    const scope = `user:u-${uid()}`;
    const cases: [Record<string, unknown>, string][] = [
      [{ key: "" }, "BEM-140"],
      [{ key: "has space" }, "BEM-140"],
      [{ key: "x".repeat(129) }, "BEM-140"],
      [{ ttl_seconds: 0 }, "BEM-141"],
      [{ ttl_seconds: 1.5 }, "BEM-141"],
      [{ expires_at: Date.now() - 1000 }, "BEM-141"],
      [{ expires_at: Date.now() + 60_000, ttl_seconds: 60 }, "BEM-141"],
    ];
    for (const [extra, code] of cases) {
      const res = await remember(t.adminKey, { scope, kind: "note", text: "x", ...extra });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(((await res.json()) as Err).error.code).toBe(code);
    }
    expect((await list(t.adminKey, `scope=${scope}`)).body.facts).toEqual([]);
  });
});

describe("expiry", () => {
  it("expired facts never list, load or show history; the scheduled purge removes them with their history and index rows", async () => {
    const t = await createTenant();
    const scope = MemoryScope.new("user", `u-${uid()}`);
    const store = new D1FactsBackend(env.DB, t.tenant);
    const now = Date.now();
    const gone = await store.remember(scope, "note", "Temporary discount code SAVE10.", { key: "promo", expiresAt: now + 1000, now: now - 5000 });
    await store.remember(scope, "note", "Temporary discount code SAVE20.", { key: "promo", expiresAt: now - 1, now: now - 2000 });
    const kept = await store.remember(scope, "note", "Permanent: the user prefers email.", {});
    const ttl = await remember(t.adminKey, { scope: scope.toString(), kind: "note", text: "Valid for an hour.", ttl_seconds: 3600 });
    const ttlFact = (await ttl.json()) as FactOut;
    expect(ttlFact.expires_at).toBeGreaterThan(now + 3_500_000);

    expect((await list(t.adminKey, `scope=${scope}`)).body.facts.map((f) => f.text)).toEqual(["Permanent: the user prefers email.", "Valid for an hour."]);
    expect((await list(t.adminKey, `scope=${scope}&q=discount`)).body.facts).toEqual([]);
    expect((await api(`/v1/memory/facts/${gone.id}/history`, { key: t.adminKey })).status).toBe(404);
    const ctx = (await (await api("/v1/memory/context", { key: t.adminKey, body: { scopes: [scope.toString()], max_tokens: 4000 } })).json()) as {
      messages: { content: string }[];
    };
    expect(ctx.messages.map((m) => m.content).join("\n")).not.toContain("SAVE");
    // A tight budget takes the ranked path, which must skip expired facts too.
    const tight = (await (
      await api("/v1/memory/context", { key: t.adminKey, body: { scopes: [scope.toString()], max_tokens: 48, query: "discount code" } })
    ).json()) as {
      messages: { content: string }[];
      dropped: { facts: number };
    };
    expect(tight.messages.map((m) => m.content).join("\n")).not.toContain("SAVE");
    expect(tight.dropped.facts).toBe(1); // two live facts, one fits; the expired one is not counted

    const ctl = createScheduledController({ scheduledTime: Date.now(), cron: "17 * * * *" });
    const ec = createExecutionContext();
    await worker.scheduled(ctl, env, ec);
    await waitOnExecutionContext(ec);
    expect(await rows("SELECT id FROM facts WHERE id = ?", gone.id)).toEqual([]);
    expect(await rows("SELECT fact_id FROM fact_versions WHERE fact_id = ?", gone.id)).toEqual([]);
    expect(await rows("SELECT n FROM fact_scope_stats WHERE tenant_id = ? AND scope = ?", t.tenant, scope.toString())).toEqual([{ n: 2 }]);
    expect((await rows("SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'discount'")).length).toBe(0);
    expect((await store.get(kept.id))?.text).toBe("Permanent: the user prefers email.");
    expect((await store.get(ttlFact.id))?.text).toBe("Valid for an hour.");
  });
});

describe("GET /v1/memory/facts filters", () => {
  it("filters by kind and key, searches text; FTS syntax in the query is plain text, never an SQL error", async () => {
    const t = await createTenant();
    const scope = `docset:d-${uid()}`;
    for (const [kind, text] of [
      ["style", "Answer in British English."],
      ["policy", "Refunds within 30 days of purchase."],
      ["policy", "Refunds need a receipt."],
      ["style", "Use bullet points for lists."],
    ]) {
      expect((await remember(t.adminKey, { scope, kind, text })).status).toBe(201);
    }
    expect((await list(t.adminKey, `scope=${scope}&kind=policy`)).body.facts.map((f) => f.text)).toEqual([
      "Refunds within 30 days of purchase.",
      "Refunds need a receipt.",
    ]);
    const hits = (await list(t.adminKey, `scope=${scope}&q=${encodeURIComponent("receipt for refunds?")}`)).body.facts;
    expect(hits[0]!.text).toBe("Refunds need a receipt.");
    expect(hits.map((f) => f.text)).toHaveLength(2);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score!);
    expect((await list(t.adminKey, `scope=${scope}&kind=style&q=refunds`)).body.facts).toEqual([]);

    for (const q of ['"', "refund*", "a AND (b", "NEAR(x y)", "owner:abc", "'; DROP TABLE facts; --", "^col:", "\u0000", "***", "-", "text : refunds"]) {
      const r = await list(t.adminKey, `scope=${scope}&q=${encodeURIComponent(q)}`);
      expect(r.status, q).toBe(200);
    }
    const bad = await list(t.adminKey, `scope=${scope}&kind=Bad Kind`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("BEM-063");
    const cursorWithQ = await list(t.adminKey, `scope=${scope}&q=refunds&cursor=1~x`);
    expect(cursorWithQ.body.error.code).toBe("BEM-142");
  });

  it("a search filtered by kind or key finds matches ranked below the page of unfiltered hits", async () => {
    const t = await createTenant();
    const scope = `docset:d-${uid()}`;
    // Twelve short notes that match "refund" better than the one long policy fact of another kind.
    for (let i = 0; i < 12; i++) expect((await remember(t.adminKey, { scope, kind: "note", text: `Refund ${i}.` })).status).toBe(201);
    const policy = `A refund is paid back to the original card within five working days, ${"after the returned goods are checked ".repeat(6)}`;
    expect((await remember(t.adminKey, { scope, kind: "policy", key: "refunds", text: policy })).status).toBe(201);
    const unfiltered = (await list(t.adminKey, `scope=${scope}&q=refund&limit=13`)).body.facts;
    expect(unfiltered.at(-1)!.kind).toBe("policy"); // the policy fact ranks last
    expect((await list(t.adminKey, `scope=${scope}&q=refund&kind=policy&limit=1`)).body.facts.map((f) => f.kind)).toEqual(["policy"]);
    expect((await list(t.adminKey, `scope=${scope}&q=refund&key=refunds&limit=2`)).body.facts.map((f) => f.key)).toEqual(["refunds"]);
  });
});

describe("tenant isolation and grants on the new routes", () => {
  it("another tenant's facts are invisible to search and history; a member sees only its grants", async () => {
    const a = await createTenant({ memberScopes: ["docset:*"] });
    const b = await createTenant();
    const scope = "organization:shared-name";
    const mine = (await (await remember(a.adminKey, { scope, kind: "secret", key: "k", text: "Tenant A launch codeword is PELICAN." })).json()) as FactOut;
    await remember(a.adminKey, { scope, kind: "secret", key: "k", text: "Tenant A launch codeword is HERON." });
    await remember(b.adminKey, { scope, kind: "note", text: "Tenant B also talks about a codeword." });

    const seenByB = (await list(b.adminKey, `scope=${scope}&q=codeword`)).body.facts;
    expect(seenByB.map((f) => f.text)).toEqual(["Tenant B also talks about a codeword."]);
    expect((await list(b.adminKey, `scope=${scope}&key=k`)).body.facts).toEqual([]);
    const hB = await api(`/v1/memory/facts/${mine.id}/history`, { key: b.adminKey });
    expect(hB.status).toBe(404);
    expect(((await hB.json()) as Err).error.code).toBe("BEM-061");
    // B writing the same key in the same scope name makes B's own fact; A's is untouched.
    await remember(b.adminKey, { scope, kind: "secret", key: "k", text: "B's text" });
    const hA = (await (await api(`/v1/memory/facts/${mine.id}/history`, { key: a.adminKey })).json()) as { fact: FactOut; versions: unknown[] };
    expect(hA.fact.text).toBe("Tenant A launch codeword is HERON.");
    expect(hA.versions).toHaveLength(1);

    // A's member key holds docset:* only: by id, a fact in a scope it cannot read is not found (the id tells nothing).
    const hM = await api(`/v1/memory/facts/${mine.id}/history`, { key: a.memberKey });
    expect(hM.status).toBe(404);
    expect(((await hM.json()) as Err).error.code).toBe("BEM-061");
    const qM = await list(a.memberKey, `scope=${scope}&q=codeword`);
    expect(qM.status).toBe(403);
    expect(qM.body.error.code).toBe("BEM-023");
    const wM = await remember(a.memberKey, { scope, kind: "secret", key: "k", text: "member overwrite" });
    expect(wM.status).toBe(403);
    expect(((await api(`/v1/memory/facts/${mine.id}/history`, { key: a.adminKey }).then((r) => r.json())) as { fact: FactOut }).fact.text).toBe(
      "Tenant A launch codeword is HERON.",
    );
  });

  it("a fact keeps its 20 newest earlier texts: a member replacing one keyed fact again and again grows nothing past them", async () => {
    // Replacing under a key needs no room under MAX_FACTS_PER_TENANT, and every replacement kept the old
    // text for good: one member key could add 8 KiB to the shared D1 a request, without end.
    const t = await createTenant({ memberScopes: ["user:*"] });
    const scope = `user:u-${uid()}`;
    const big = "x".repeat(4000);
    let id = "";
    for (let i = 1; i <= 25; i++) {
      const res = await remember(t.memberKey, { scope, kind: "note", key: "scratch", text: `${i} ${big}` });
      expect(res.status).toBe(201);
      id = ((await res.json()) as FactOut).id;
    }
    expect(await rows("SELECT version FROM fact_versions WHERE fact_id = ? ORDER BY version", id)).toEqual(
      Array.from({ length: 20 }, (_, i) => ({ version: i + 5 })),
    );
    const history = (await (await api(`/v1/memory/facts/${id}/history`, { key: t.memberKey })).json()) as {
      fact: FactOut;
      versions: { version: number; text: string }[];
    };
    expect(history.fact.version).toBe(25);
    expect(history.versions.map((v) => v.version)).toEqual(Array.from({ length: 20 }, (_, i) => 24 - i));
    expect(history.versions[0]!.text).toBe(`24 ${big}`);
  });

  it("a scope whose last fact is forgotten gives its stats row and index span back: remember-and-forget over new scopes leaves nothing behind", async () => {
    // Every new scope takes a row and a span of the one full-text index every tenant shares (2^27 in all,
    // migration 0018), and both stayed for good: a member with a wildcard grant could spend them without end.
    const t = await createTenant({ memberScopes: ["docset:*"] });
    const base = `tmp-${uid()}`;
    for (let i = 0; i < 5; i++) {
      const made = await remember(t.memberKey, { scope: `docset:${base}-${i}`, kind: "note", text: `scratch ${i}` });
      expect(made.status).toBe(201);
      const { id } = (await made.json()) as FactOut;
      expect((await api(`/v1/memory/facts/${id}`, { method: "DELETE", key: t.memberKey })).status).toBe(200);
    }
    expect(await rows("SELECT scope, span FROM fact_scope_stats WHERE tenant_id = ?", t.tenant)).toEqual([]);
    // A scope written after that is searched as before (a span given back may be given again).
    expect((await remember(t.memberKey, { scope: `docset:${base}-kept`, kind: "note", text: "the kept walrus" })).status).toBe(201);
    expect((await list(t.memberKey, `scope=docset:${base}-kept&q=walrus`)).body.facts.map((f) => f.text)).toEqual(["the kept walrus"]);
    expect(await rows("SELECT n FROM fact_scope_stats WHERE tenant_id = ?", t.tenant)).toEqual([{ n: 1 }]);
  });

  it("a key reused after its fact expired, before the purge, starts a fresh fact: version 1, a new id, no history of the expired text (REST and MCP remember)", async () => {
    const t = await createTenant();
    const scope = MemoryScope.new("user", `u-${uid()}`);
    const store = new D1FactsBackend(env.DB, t.tenant);
    const now = Date.now();
    const expiredFact = async (key: string) => {
      const first = await store.remember(scope, "note", `EXPIRED-SECRET card ${key} v1`, { key, expiresAt: now + 1000, now: now - 5000 });
      await store.remember(scope, "note", `EXPIRED-SECRET card ${key} v2`, { key, expiresAt: now - 1, now: now - 2000 });
      return first.id;
    };
    const fresh = async (old: string, fact: FactOut) => {
      expect(fact).toMatchObject({ version: 1, replaced: false });
      expect(fact.id).not.toBe(old);
      const history = (await (await api(`/v1/memory/facts/${fact.id}/history`, { key: t.adminKey })).json()) as { versions: unknown[] };
      expect(history.versions).toEqual([]);
      expect(await rows("SELECT version FROM fact_versions WHERE fact_id IN (?, ?)", old, fact.id)).toEqual([]);
      expect(await rows("SELECT id FROM facts WHERE id = ?", old)).toEqual([]);
    };
    const rest = await expiredFact("card-rest");
    const res = await remember(t.adminKey, { scope: scope.toString(), kind: "note", key: "card-rest", text: "A new card." });
    expect(res.status).toBe(201);
    await fresh(rest, (await res.json()) as FactOut);

    const viaMcp = await expiredFact("card-mcp");
    const client = await mcpClient(t.adminKey);
    const r = await callJson(client, "remember", { scope: scope.toString(), kind: "note", key: "card-mcp", text: "A new card." });
    expect(r.error).toBe(false);
    const got = await store.get(String(r.json!.id));
    await fresh(viaMcp, { ...got!, replaced: r.json!.replaced as boolean });
    await client.close();
  });
});
