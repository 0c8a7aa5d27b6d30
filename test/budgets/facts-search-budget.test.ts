import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { spendGuard } from "../../src/pipeline/spend-guard";
import { compiled } from "../../src/routing/models.generated";
import { bagOfWords } from "../support/fake-ai";
import { callJson, mcpClient } from "../support/mcp-client";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { clearUpstream, mockUpstream, upstreamRequests } from "../support/upstream";

/**
 * Issue 35: a facts search outside a run (GET /v1/memory/facts?q=, MCP's recall with and without scopes) holds its
 * remote embedder call against the caller's key and tenant budgets: a spent budget refuses it before it goes out and the
 * search ranks by words. models.yaml's `embedder` is set here as a deployment would compile it (and put back after).
 */

const chosen = compiled.embedder;
afterEach(() => {
  compiled.embedder = chosen;
  clearUpstream();
});

const embeddings = () =>
  mockUpstream("https://api.openai.com", async (req) => {
    const { input } = (await req.json()) as { input: string[] };
    return Response.json({ data: input.map((t, index) => ({ index, embedding: bagOfWords(t, 1536) })), usage: { prompt_tokens: 5 } });
  });

async function spentTenant(): Promise<TestTenant> {
  const t = await createTenant();
  const made = await api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey, body: { kind: "tenant", limit_usd: 0.000001 } });
  const { id } = (await made.json()) as { id: string };
  (await spendGuard(env, { tenant: t.tenant, keyId: t.adminKeyId }, undefined, () => undefined).hold(1)).settle(1);
  const spent = async () => ((await (await api(`/v1/admin/tenants/${t.tenant}/budgets/${id}`, { key: t.adminKey })).json()) as { spent_usd: number }).spent_usd;
  await expect.poll(spent).toBe(0.000001);
  return t;
}

describe("a facts search outside a run, under a spent budget", () => {
  it("is not embedded: GET /v1/memory/facts?q= and MCP's recall rank by words, and the embedder sees no request", async () => {
    const t = await spentTenant();
    const remember = (text: string) => api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "note", text } });
    expect((await remember("The lighthouse keeper repaints the red stripes every spring.")).status).toBe(201);
    compiled.embedder = "openai-small";
    embeddings();
    const run = crypto.randomUUID().slice(0, 8);

    const res = await api(`/v1/memory/facts?scope=organization:acme&q=${encodeURIComponent(`lighthouse stripes ${run}`)}`, { key: t.adminKey });
    expect(res.status).toBe(200);
    const { facts } = (await res.json()) as { facts: { text: string; channels: Record<string, unknown> }[] };
    expect(facts[0]?.text).toContain("lighthouse");
    expect(facts[0]?.channels.dense).toBeUndefined();

    const client = await mcpClient(t.adminKey);
    for (const args of [{ scopes: ["organization:acme"] }, {}]) {
      const r = await callJson(client, "recall", { query: `repaints the stripes ${run} ${Object.keys(args).length}`, ...args });
      expect(r.error, r.text).toBe(false);
      expect((r.json!.facts as { text: string }[])[0]?.text).toContain("lighthouse");
    }
    expect(upstreamRequests()).toEqual([]);
  });

  it("with room left the same searches are embedded (the check above is the budget's doing)", async () => {
    const t = await createTenant();
    expect(
      (await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "note", text: "The ferry leaves at nine." } })).status,
    ).toBe(201);
    compiled.embedder = "openai-small";
    embeddings();
    const res = await api(`/v1/memory/facts?scope=organization:acme&q=${encodeURIComponent(`ferry ${crypto.randomUUID().slice(0, 8)}`)}`, { key: t.adminKey });
    expect(res.status).toBe(200);
    expect(upstreamRequests().length).toBeGreaterThan(0);
  });
});
