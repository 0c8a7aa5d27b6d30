import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { factsEmbedder, knowFactsEmbedder } from "../../src/embed/embedders";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { embedOlderFacts } from "../../src/memory/fact-vectors";
import { MemoryScope } from "../../src/memory/scope";
import { embedderOf } from "../../src/pipeline/run-embed";
import { unique } from "../thread/support";
import { BGE_DIMS, deployed, fakeAi } from "../support/fake-ai";

/**
 * Facts with a remote embedder (docs/concepts/recall-by-meaning.md, src/memory/fact-vectors.ts): written with no vector
 * (no network inside a write), embedded by the scheduled task in bounded batches and billed to
 * their tenant, ranked by meaning only with that embedder's own vectors; an embedder that fails
 * leaves them ranked by words.
 */

const TARGET = "The lighthouse keeper repaints the red stripes every spring.";
const filler = (n: number) => Array.from({ length: n }, (_, i) => `Routine status update ${i} about invoices and the quarterly budget.`);

afterEach(() => knowFactsEmbedder(embedderOf(env)));

type Row = { text: string; bytes: number | null; vec_by: string | null };
const rowsOf = async (tenant: string) =>
  (await env.DB.prepare("SELECT text, length(vec) AS bytes, vec_by FROM facts WHERE tenant_id = ? ORDER BY rowid").bind(tenant).all<Row>()).results;

/** The facts loaded as relevant to `query`, by meaning alone, with room for a few. */
async function byMeaning(store: D1FactsBackend, scope: MemoryScope, query: string): Promise<string[]> {
  const layer = await store.loadLayer(scope, { facts: 60, rank: { query, channels: ["dense"] } });
  return layer.facts.filter((f) => f.why?.reason === "relevant").map((f) => f.text);
}

/** A fresh tenant's scope with `ai` as the facts' embedder (Workers AI's bge-small). */
function remoteScope(name: string, ai: ReturnType<typeof fakeAi>) {
  knowFactsEmbedder(embedderOf(deployed(ai), "bge-small"));
  const tenant = unique(name);
  return { tenant, scope: MemoryScope.new("organization", unique("o")), store: new D1FactsBackend(env.DB, tenant) };
}

/** Scheduled-task batches until this tenant's facts have vectors (other tests' facts may be newer; each batch bounded). */
async function embedAll(tenant: string): Promise<void> {
  for (let i = 0; i < 20 && (await rowsOf(tenant)).some((r) => r.vec_by === null); i++) await embedOlderFacts(env.DB, factsEmbedder(), undefined, 64, 1);
}

describe("facts with a remote embedder", () => {
  it("written without a vector; the scheduled task embeds them, billed to their tenant; then they rank by meaning", async () => {
    const ai = fakeAi();
    const { tenant, scope, store } = remoteScope("facts-remote", ai);
    for (const text of [...filler(20), TARGET, ...filler(20).map((t) => `${t} Again.`)]) await store.remember(scope, "note", text);
    expect(ai.calls).toEqual([]);
    expect((await rowsOf(tenant)).every((r) => r.bytes === null && r.vec_by === null)).toBe(true);
    // No vector of its own yet: nothing by meaning.
    expect(await byMeaning(store, scope, "lighthouse stripes")).toEqual([]);

    await embedAll(tenant);
    const rows = await rowsOf(tenant);
    expect(rows.every((r) => r.vec_by === factsEmbedder().turns.id && r.bytes === BGE_DIMS)).toBe(true);
    expect(await byMeaning(store, scope, "lighthouse stripes")).toContain(TARGET);
    const usage = await env.DB.prepare("SELECT model, cause, prompt_tokens, cost FROM usage WHERE tenant_id = ?")
      .bind(tenant)
      .all<{ model: string; cause: string; prompt_tokens: number; cost: number }>();
    expect(usage.results).toHaveLength(1);
    expect(usage.results[0]).toMatchObject({ model: "bge-small", cause: "embedding" });
    expect(usage.results[0]!.prompt_tokens).toBeGreaterThan(0);
  });

  it("an embedder that fails: nothing is written, the facts rank by words, and a later run embeds them", async () => {
    knowFactsEmbedder(embedderOf(deployed(fakeAi("short")), "bge-small"));
    const tenant = unique("facts-failing");
    const scope = MemoryScope.new("organization", unique("o"));
    const store = new D1FactsBackend(env.DB, tenant);
    for (const text of [...filler(30), TARGET]) await store.remember(scope, "note", text);
    expect(await embedOlderFacts(env.DB, factsEmbedder(), undefined, 64, 1)).toBe(0);
    expect((await rowsOf(tenant)).every((r) => r.bytes === null)).toBe(true);
    const both = await store.loadLayer(scope, { facts: 60, rank: { query: "lighthouse stripes" } });
    expect(both.facts.filter((f) => f.why?.reason === "relevant").map((f) => f.text)).toContain(TARGET);
    expect(await byMeaning(store, scope, "lighthouse stripes")).toEqual([]);
    const usage = await env.DB.prepare("SELECT count(*) AS n FROM usage WHERE tenant_id = ?").bind(tenant).first<{ n: number }>();
    expect(usage?.n).toBe(0);
    knowFactsEmbedder(embedderOf(deployed(fakeAi()), "bge-small"));
    await embedAll(tenant);
    expect(await byMeaning(store, scope, "lighthouse stripes")).toContain(TARGET);
  });

  it("a scope of one fact ranks by meaning against the embedder's background (neutral sentences, embedded once with a query)", async () => {
    const ai = fakeAi();
    const { tenant, scope, store } = remoteScope("facts-small-set", ai);
    await store.remember(scope, "note", TARGET);
    await embedAll(tenant);
    // Closer to the question than neutral text is: close in meaning (the fake sentence model: in words), though it is the whole
    // set (alone, its own mean left it nothing: a score of 0).
    const found = await store.recall({ scopes: [scope] }, "lighthouse stripes", 10);
    expect(found.map((f) => f.text)).toEqual([TARGET]);
    expect(found[0]!.channels.dense!.score).toBeGreaterThan(0.2);
    // A question it has nothing to do with: not.
    expect(await store.recall({ scopes: [scope] }, "quarterly invoices", 10)).toEqual([]);
    // The background came with the first query, once: later queries send only themselves.
    const sent = ai.calls.slice(-2).map((c) => c.text.length);
    expect(sent[0]).toBeGreaterThan(1);
    expect(sent[1]).toBe(1);
  });
});
