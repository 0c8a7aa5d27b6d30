import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { summarizerFor } from "../../src/pipeline/summarizer";
import { extractionTaskId } from "../../src/queue/messages";
import { taskStatus } from "../../src/tasks/store";
import { fakeOpenAI } from "../support/fake-openai";
import { uniqueThread } from "../support/runs";
import { api, createKey, createTenant } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 35, item 2: a summary (the summarization middleware's and the summarize task's call) reserves against
 * the budgets over its key and thread and settles to what its usage row bills, like a turn's own calls.
 */
const messages = [
  { id: "u0", role: "user" as const, content: "What is our refund policy?", created_at: 1 },
  { id: "a0", role: "assistant" as const, content: "Thirty days, receipt required.", created_at: 2 },
];
type Standing = { spent_usd: number; reserved_usd: number };

async function setup(limit_usd: number, kind: "key" | "thread") {
  const t = await createTenant();
  const key = await createKey(t.tenant, { role: "admin" });
  const thread = uniqueThread("sum");
  const res = await api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey, body: { kind, target: kind === "key" ? key.id : thread, limit_usd } });
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as { id: string };
  const standing = async () => (await (await api(`/v1/admin/tenants/${t.tenant}/budgets/${id}`, { key: t.adminKey })).json()) as Standing;
  return { t, key, thread, standing };
}

describe("summaries spend from budgets", () => {
  it("a summary reserves and settles against the key's budget: spent equals its usage row", async () => {
    const { t, key, thread, standing } = await setup(1, "key");
    fakeOpenAI().reply({ text: "Refunds: 30 days with a receipt.", usage: { prompt_tokens: 1000, completion_tokens: 1000 } });
    const summarize = summarizerFor({ env }, { tenant: t.tenant, keyId: key.id }, "summarization", thread);
    expect(await summarize(messages, { model: "gpt-4o-mini" })).toContain("30 days");
    const after = await waitFor("settled", async () => {
      const s = await standing();
      return s.reserved_usd === 0 && s.spent_usd > 0 ? s : undefined;
    });
    expect(Math.round(after.spent_usd * 1e6)).toBe(750);
    const usage = (await (await api("/v1/usage", { key: t.adminKey })).json()) as { data: { cause: string; cost: number }[] };
    expect(Math.round(usage.data.filter((r) => r.cause === "summarization").reduce((s, r) => s + r.cost, 0) * 1e6)).toBe(750);
  });

  it("a thread budget without room refuses the summary with BEM-230 before anything goes upstream", async () => {
    const { t, thread } = await setup(0.000001, "thread");
    const openai = fakeOpenAI();
    const summarize = summarizerFor({ env }, { tenant: t.tenant, keyId: "" }, "summarize_task", thread);
    await expect(summarize(messages, { model: "gpt-4o-mini" })).rejects.toMatchObject({ code: "BEM-230" });
    expect(openai.calls).toEqual([]);
  });
});

/** A note-taker turn on `thread` (its agent extracts facts after each turn); resolves with its extraction task's outcome. */
async function noteTaker(key: string, tenant: string, thread: string) {
  const res = await api("/v1/chat/completions", {
    key,
    body: { model: "gpt-4o-mini", max_tokens: 100, agent: "note-taker", thread_id: thread, messages: [{ role: "user", content: "I drink tea." }] },
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { edgeweave: { checkpoint_id: string } };
  const id = await extractionTaskId(tenant, thread, body.edgeweave.checkpoint_id);
  return waitFor("extraction outcome", async () => {
    const s = await taskStatus(env.DB, tenant, id);
    return s.status === "pending" ? undefined : s;
  });
}

describe("fact extraction spends from budgets", () => {
  const USAGE = { prompt_tokens: 1000, completion_tokens: 1000 };
  const FACTS = JSON.stringify({ facts: [{ key: "drink", kind: "preference", text: "Prefers tea." }] });

  it("the extraction after a turn is held and settled on the turn's key: spent equals the turn's and the extraction's usage rows", async () => {
    const { t, key, thread, standing } = await setup(1, "key");
    fakeOpenAI().reply({ text: "Noted.", usage: USAGE }).reply({ text: FACTS, usage: USAGE });
    expect(await noteTaker(key.key, t.tenant, thread)).toMatchObject({ status: "done", result: { stored: 1 } });
    const after = await waitFor("settled", async () => {
      const s = await standing();
      return s.reserved_usd === 0 && Math.round(s.spent_usd * 1e6) >= 1500 ? s : undefined;
    });
    expect(Math.round(after.spent_usd * 1e6)).toBe(1500);
    const usage = (await (await api("/v1/usage", { key: t.adminKey })).json()) as { data: { cause: string; cost: number }[] };
    expect(usage.data.map((r) => r.cause).sort()).toEqual(["extraction", "turn"]);
    expect(Math.round(usage.data.reduce((s, r) => s + r.cost, 0) * 1e6)).toBe(1500);
  });

  it("an extraction the budget has no room for is skipped, saying why, and never goes upstream", async () => {
    // Room for the turn (max_tokens 100), not for the extraction (gpt-4o-mini's whole output limit).
    const { t, key, thread } = await setup(0.005, "key");
    const openai = fakeOpenAI().reply({ text: "Noted.", usage: USAGE });
    const outcome = await noteTaker(key.key, t.tenant, thread);
    expect(outcome).toMatchObject({ status: "done", result: { skipped: expect.stringContaining("Budget") } });
    expect(openai.calls.length).toBe(1);
  });
});
