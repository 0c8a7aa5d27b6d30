import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { spendGuard } from "../../src/pipeline/spend-guard";
import { compiled } from "../../src/routing/models.generated";
import { bagOfWords } from "../support/fake-ai";
import { api, createTenant } from "../support/tenants";
import { clearUpstream, mockUpstream, upstreamRequests } from "../support/upstream";

/**
 * POST /v1/memory/context with a remote embedder (docs/concepts/recall-by-meaning.md): when it fails, the answer ranks by words
 * and its `warnings` say so, as a run's reply does. The deployment's choice is models.yaml's `embedder`, set here as a
 * deployment would compile it (and put back after); the OpenAI-compatible endpoint is the fake upstream.
 */

type Ctx = { warnings?: string[]; facts: { id: string; loaded: boolean; reason?: string }[]; recalled: { id: string }[] };

const FAILED = "recall by meaning was off for this turn (embedder openai-small: failed); it ran on full-text search";
const chosen = compiled.embedder;

afterEach(() => {
  compiled.embedder = chosen;
  clearUpstream();
});

const failing = () => mockUpstream("https://api.openai.com", () => Response.json({ error: { message: "overloaded" } }, { status: 503 }));
const working = () =>
  mockUpstream("https://api.openai.com", async (req) => {
    const { input } = (await req.json()) as { input: string[] };
    return Response.json({ data: input.map((t, index) => ({ index, embedding: bagOfWords(t, 1536) })), usage: { prompt_tokens: 5 } });
  });

async function seeded() {
  const t = await createTenant();
  const docset = `docset:cw-${crypto.randomUUID().slice(0, 8)}`;
  const thread = `cw-${crypto.randomUUID().slice(0, 8)}`;
  const remember = (text: string) => api("/v1/memory/facts", { key: t.adminKey, body: { scope: docset, kind: "note", text } });
  const { id: planted } = (await (await remember("The lighthouse keeper repaints the red stripes every spring.")).json()) as { id: string };
  // More than the facts share of 1,000 tokens holds: the scope is ranked for the query.
  for (let i = 0; i < 60; i++) await remember(`Routine note ${i} about invoices, meetings and the quarterly budget.`);
  const messages = Array.from({ length: 200 }, (_, i) => ({
    id: `m${i}`,
    role: i % 2 ? "assistant" : "user",
    content: i === 20 ? "Did you see who repaints the lighthouse stripes?" : `Chat ${i}: the weather stays mild and the office plants are watered.`,
  }));
  expect((await api(`/v1/threads/${thread}/state`, { key: t.adminKey, body: { ops: [{ op: "append", messages }] } })).status).toBe(200);
  const ask = async (scopes: string[], channels?: string[], query = "lighthouse stripes") => {
    const res = await api("/v1/memory/context", {
      key: t.adminKey,
      body: { scopes, max_tokens: 1000, query, ...(channels ? { channels } : {}) },
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Ctx;
  };
  return { ask, planted, docset, session: `session:${thread}`, t };
}

describe("POST /v1/memory/context with a remote embedder", () => {
  it("facts: an embedder that fails is in the answer's warnings, and the facts rank by words", async () => {
    const { ask, planted, docset } = await seeded();
    compiled.embedder = "openai-small";
    failing();
    const ctx = await ask([docset]);
    expect(ctx.warnings).toEqual([FAILED]);
    expect(ctx.facts.find((f) => f.id === planted)).toMatchObject({ loaded: true, reason: "relevant" });
    // Words only: the embedder is not called, nothing to say.
    const calls = upstreamRequests().length;
    expect((await ask([docset], ["full_text"])).warnings).toBeUndefined();
    expect(upstreamRequests()).toHaveLength(calls);
    // Answering again: no warning.
    working();
    expect((await ask([docset])).warnings).toBeUndefined();
  });

  it("facts: a spent budget refuses the query's embedding before it goes out, and the answer names the budget", async () => {
    const { ask, planted, docset, t } = await seeded();
    compiled.embedder = "openai-small";
    working();
    const made = await api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey, body: { kind: "tenant", limit_usd: 0.000001 } });
    const { id } = (await made.json()) as { id: string };
    const spend = spendGuard(env, { tenant: t.tenant, keyId: t.adminKeyId }, undefined, () => undefined);
    (await spend.hold(1)).settle(1);
    const spent = async () =>
      ((await (await api(`/v1/admin/tenants/${t.tenant}/budgets/${id}`, { key: t.adminKey })).json()) as { spent_usd: number }).spent_usd;
    await expect.poll(spent).toBe(0.000001);
    const calls = upstreamRequests().length;
    // A query no earlier test embedded (the isolate keeps the vectors it fetched).
    const ctx = await ask([docset], undefined, "who repaints the lighthouse stripes");
    expect(upstreamRequests()).toHaveLength(calls);
    expect(ctx.warnings).toHaveLength(1);
    expect(ctx.warnings?.[0]).toMatch(/^recall by meaning was off for this turn \(embedder openai-small: .*it ran on full-text search$/);
    expect(ctx.warnings?.[0]).toContain(id);
    expect(ctx.facts.find((f) => f.id === planted)).toMatchObject({ loaded: true, reason: "relevant" });
  });

  it("turns: a thread whose object embeds with a failing remote embedder says so in the answer's warnings", async () => {
    // The thread's object is made while the file names the remote embedder: its turns use it (as a run of an agent naming it would set).
    compiled.embedder = "openai-small";
    const { ask, session } = await seeded();
    // Facts use the embedded table again; only the thread's turns need the remote one.
    compiled.embedder = chosen;
    failing();
    const ctx = await ask([session]);
    expect(ctx.warnings).toEqual([FAILED]);
    expect(ctx.recalled.map((r) => r.id)).toContain("m20");
  });
});
