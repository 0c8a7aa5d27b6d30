import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api, createKey, createTenant, type TestTenant } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 35: a budget is a hard cap. Each model call reserves the most it can cost (prompt as sent,
 * max_tokens at the output price) in the budget's object before anything goes upstream, and settles
 * to its real usage after; a call the budget has no room for is 402 BEM-230 and never reaches the provider.
 */
const tenant = tenantForRuns();
type Standing = { id: string; spent_usd: number; reserved_usd: number; remaining_usd: number; resets_at: string | null };

const budgets = (t: TestTenant) => `/v1/admin/tenants/${t.tenant}/budgets`;
async function makeBudget(t: TestTenant, body: Record<string, unknown>): Promise<Standing> {
  const res = await api(budgets(t), { key: t.adminKey, body });
  expect(res.status).toBe(201);
  return (await res.json()) as Standing;
}
const standing = async (t: TestTenant, id: string) => (await (await api(`${budgets(t)}/${id}`, { key: t.adminKey })).json()) as Standing;
/** Settles go out after the answer: wait until nothing is held. */
const settled = (t: TestTenant, id: string) => waitFor("settled", async () => ((await standing(t, id)).reserved_usd === 0 ? standing(t, id) : undefined));

// gpt-4o-mini: $0.15 / $0.60 per million tokens. max_tokens 10,000 reserves $0.006 of output (plus a few
// prompt tokens); a call that reports 1,000 + 1,000 tokens costs $0.00075 (750 micro-USD).
const USAGE = { prompt_tokens: 1000, completion_tokens: 1000 };
const chat = (key: string, extra: Record<string, unknown> = {}) =>
  api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", max_tokens: 10_000, messages: [{ role: "user", content: "hi" }], ...extra } });
const completion = () =>
  Response.json({
    id: "chatcmpl-gate",
    object: "chat.completion",
    created: 1,
    model: "gpt-4o-mini",
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    usage: { ...USAGE, total_tokens: 2000 },
  });

/** An OpenAI fake whose `n` answers wait for `release()`; `arrived()` counts the calls that reached it. */
function gatedProvider(n: number) {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const fake = fakeOpenAI();
  let arrived = 0;
  for (let i = 0; i < n; i++)
    fake.respond(async () => {
      arrived++;
      await gate;
      return completion();
    });
  return { fake, arrived: () => arrived, release };
}

describe("a budget's cap holds under concurrency", () => {
  it("12 parallel turns against a key budget with room for 3: exactly 3 reach the provider, the rest are 402, spend never passes the cap", async () => {
    // A tenant of its own: its usage rows are this test's alone.
    const t = await createTenant();
    const key = await createKey(t.tenant, { role: "admin", name: "capped" });
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.0185 });
    // Every upstream call waits until all turns are in: the 3 holds are all in flight when the others ask.
    const { fake, arrived, release } = gatedProvider(12);
    const turns = Array.from({ length: 12 }, () => chat(key.key));
    const refused = await waitFor("the refusals", async () => {
      const s = await standing(t, b.id);
      return arrived() === 3 && s.reserved_usd > 0.018 ? s : undefined;
    });
    expect(refused.remaining_usd).toBeLessThan(0.006);
    release();
    const answers = await Promise.all(turns);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(3).fill(200), ...Array(9).fill(402)]);
    expect(fake.calls.length).toBe(3);
    const after = await settled(t, b.id);
    // Settled to what the 3 calls really cost, the rest of each reservation released.
    expect(Math.round(after.spent_usd * 1e6)).toBe(3 * 750);
    expect(Math.round(after.remaining_usd * 1e6)).toBe(18_500 - 2250);
    // The same spend, exactly, as the usage the calls were billed (written after the answer).
    const billed = await waitFor("usage rows", async () => {
      const u = (await (await api("/v1/usage", { key: key.key })).json()) as { total: { requests: number; cost: number } };
      return u.total.requests === 3 ? u.total : undefined;
    });
    expect(Math.round(billed.cost * 1e6)).toBe(Math.round(after.spent_usd * 1e6));
  });

  it("a tenant budget shared by two keys: the held room is the tenant's, not each key's", async () => {
    const t = tenant();
    const b = await makeBudget(t, { kind: "tenant", limit_usd: 0.0125 });
    const other = await createKey(t.tenant, { role: "admin" });
    const { arrived, release } = gatedProvider(6);
    const turns = [0, 1, 2].flatMap(() => [chat(t.adminKey), chat(other.key)]);
    await waitFor("two held", async () => (arrived() === 2 && (await standing(t, b.id)).reserved_usd > 0.012 ? true : undefined));
    release();
    expect((await Promise.all(turns)).map((r) => r.status).sort()).toEqual([200, 200, 402, 402, 402, 402]);
    await api(`${budgets(t)}/${b.id}`, { method: "DELETE", key: t.adminKey });
  });
});

describe("settling, resets and refusals", () => {
  it("a settled call releases the rest of its hold: serial calls each fit a budget that holds only one reservation", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.0085 });
    fakeOpenAI().otherwise({ text: "ok", usage: USAGE });
    for (let i = 1; i <= 2; i++) {
      expect((await chat(key.key)).status).toBe(200);
      expect(Math.round((await settled(t, b.id)).spent_usd * 1e6)).toBe(i * 750);
    }
    // Two calls at once: one holds $0.006+ while its provider waits, the other does not fit beside it.
    const { arrived, release } = gatedProvider(1);
    const both = [chat(key.key), chat(key.key)];
    expect((await Promise.race(both)).status).toBe(402);
    await waitFor("the held call upstream", async () => (arrived() === 1 ? true : undefined));
    release();
    expect((await Promise.all(both)).map((r) => r.status).sort()).toEqual([200, 402]);
  });

  it("failover and retries: each attempt reserves at its model's prices, a failed one is released, the answer is charged", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 1 });
    // capabilities ["json"] routes gpt-4o-mini, then gpt-4o ($2.50 / $10 per million): 2,500 + 10,000 micro-USD.
    const fake = fakeOpenAI().status(500).status(500).reply({ text: "second", usage: USAGE });
    const res = await chat(key.key, { model: "auto", capabilities: ["json"], max_tokens: 100 });
    expect(res.status).toBe(200);
    expect(fake.calls.map((c) => (c.body as { model: string }).model)).toEqual(["gpt-4o-mini", "gpt-4o-mini", "gpt-4o"]);
    const after = await settled(t, b.id);
    expect(Math.round(after.spent_usd * 1e6)).toBe(12_500);
  });

  it("a tool loop reserves and settles each step: both steps charged, nothing left held", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.0085 });
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ name: "write_todos", arguments: { todos: [{ content: "plan", status: "pending" }] } }], usage: USAGE })
      .reply({ text: "planned", usage: USAGE });
    const res = await chat(key.key, { agent: "planner", context: { user_name: "Ada" }, thread_id: uniqueThread("loop") });
    expect(res.status).toBe(200);
    expect(fake.calls.length).toBe(2);
    expect(Math.round((await settled(t, b.id)).spent_usd * 1e6)).toBe(1500);
  });

  it("a day window resets on its object's clock: refused before, answered after", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    // The anchor a day and a little ago: the current window ends in about 4 seconds.
    const anchor = new Date(Date.now() - 86_400_000 + 4000).toISOString();
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.0065, window: "day", anchor });
    expect(Date.parse(b.resets_at!) - Date.now()).toBeLessThan(4500);
    fakeOpenAI().otherwise({ text: "ok", usage: USAGE });
    expect((await chat(key.key)).status).toBe(200);
    await settled(t, b.id);
    const refused = await chat(key.key);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { budget: { resets_at: string } } }).error.budget.resets_at).toBe(b.resets_at);
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(b.resets_at!) - Date.now()) + 50));
    expect((await chat(key.key)).status).toBe(200);
    const fresh = await settled(t, b.id);
    expect(Math.round(fresh.spent_usd * 1e6)).toBe(750);
    expect(Date.parse(fresh.resets_at!)).toBe(Date.parse(b.resets_at!) + 86_400_000);
  });

  it("a raised limit applies to the very next call, and a deleted budget refuses nothing more", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    fakeOpenAI().otherwise({ text: "ok", usage: USAGE });
    expect((await chat(key.key)).status).toBe(200); // the tenant's budgets are now cached in this isolate
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.001 });
    expect((await chat(key.key)).status).toBe(402);
    await api(`${budgets(t)}/${b.id}`, { method: "PATCH", key: t.adminKey, body: { limit_usd: 0.01 } });
    expect((await chat(key.key)).status).toBe(200);
    await api(`${budgets(t)}/${b.id}`, { method: "PATCH", key: t.adminKey, body: { limit_usd: 0.001 } });
    expect((await chat(key.key)).status).toBe(402);
    await api(`${budgets(t)}/${b.id}`, { method: "DELETE", key: t.adminKey });
    expect((await chat(key.key)).status).toBe(200);
  });

  it("a changed window, anchor or time zone counts afresh, also on a budget that never resets", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.01 });
    fakeOpenAI().otherwise({ text: "ok", usage: USAGE });
    const patch = (body: Record<string, unknown>) => api(`${budgets(t)}/${b.id}`, { method: "PATCH", key: t.adminKey, body });
    for (const change of [{ time_zone: "Europe/Paris" }, { anchor: new Date(Date.now() - 60_000).toISOString() }, { window: "month" }]) {
      expect((await chat(key.key)).status).toBe(200);
      expect(Math.round((await settled(t, b.id)).spent_usd * 1e6)).toBe(750);
      // A window of null always starts at 0, so its spend carried over every change.
      expect(await (await patch(change)).json()).toMatchObject({ spent_usd: 0, remaining_usd: 0.01 });
      expect((await standing(t, b.id)).spent_usd).toBe(0);
    }
    // A change of the limit or the name alone keeps the window's spend.
    expect((await chat(key.key)).status).toBe(200);
    await settled(t, b.id);
    expect(await (await patch({ limit_usd: 0.02, name: "renamed" })).json()).toMatchObject({ spent_usd: 0.00075 });
  });

  it("a thread budget caps turns on that thread only", async () => {
    const t = tenant();
    const thread = uniqueThread("capped");
    await makeBudget(t, { kind: "thread", target: thread, limit_usd: 0.001 });
    fakeOpenAI().otherwise({ text: "ok", usage: USAGE });
    expect((await chat(t.adminKey, { thread_id: thread })).status).toBe(402);
    expect((await chat(t.adminKey, { thread_id: uniqueThread("free") })).status).toBe(200);
  });
});

describe("a refusal is 402 BEM-230 in each wire format's error shape, and nothing goes upstream", () => {
  const refusedKey = async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const b = await makeBudget(t, { kind: "key", target: key.id, limit_usd: 0.000001, name: "tiny" });
    return { key: key.key, b };
  };
  const budgetFields = (id: string) => ({ id, kind: "key", remaining_usd: 0.000001, limit_usd: 0.000001, resets_at: null });

  it("OpenAI chat (streamed or not) and Responses: error.code, the message naming the budget, error.budget", async () => {
    const { key, b } = await refusedKey();
    const openai = fakeOpenAI();
    for (const [path, body] of [
      ["/v1/chat/completions", { model: "gpt-4o-mini", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }],
      ["/v1/chat/completions", { model: "gpt-4o-mini", max_tokens: 100, stream: true, messages: [{ role: "user", content: "hi" }] }],
      ["/v1/responses", { model: "gpt-4o-mini", max_output_tokens: 100, input: "hi" }],
      ["/v1/responses", { model: "gpt-4o-mini", max_output_tokens: 100, input: "hi", stream: true }],
    ] as const) {
      const res = await api(path, { key, body });
      expect(res.status).toBe(402);
      expect(res.headers.get("x-edgeweave-budget")).toBe(b.id);
      const { error } = (await res.json()) as { error: { code: string; message: string; budget: unknown } };
      expect(error.code).toBe("BEM-230");
      expect(error.message).toContain(`Budget ${b.id} (tiny) on key`);
      expect(error.message).toContain("never resets");
      expect(error.budget).toEqual(budgetFields(b.id));
    }
    expect(openai.calls).toEqual([]);
  });

  it("Anthropic Messages: billing_error with bem_code, the SDK's own 402 shape", async () => {
    const { key, b } = await refusedKey();
    const anthropic = fakeAnthropic();
    const res = await api("/v1/messages", {
      key,
      headers: { "anthropic-version": "2023-06-01" },
      body: { model: "claude-sonnet-4", max_tokens: 100, messages: [{ role: "user", content: "hi" }] },
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as { type: string; error: { type: string; bem_code: string; budget: unknown } };
    expect(body.type).toBe("error");
    expect(body.error).toMatchObject({ type: "billing_error", bem_code: "BEM-230", budget: budgetFields(b.id) });
    expect(anthropic.calls).toEqual([]);
  });

  it("LangGraph agent protocol: runs/wait answers 402 with the coded error; the thread keeps nothing", async () => {
    const { key, b } = await refusedKey();
    const openai = fakeOpenAI();
    const res = await api("/v1/agent-protocol/runs/wait", {
      key,
      body: { assistant_id: "assistant", input: { messages: [{ role: "user", content: "hi" }] }, config: { configurable: { model: "gpt-4o-mini" } } },
    });
    expect(res.status).toBe(402);
    expect(await res.json()).toMatchObject({ error: { code: "BEM-230", budget: { id: b.id } } });
    expect(openai.calls).toEqual([]);
  });
});

// The counter objects are real: a budget of another tenant is another object, and its name is formed from the tenant.
it("another tenant's identical budget id names another object", () => {
  const a = env.BUDGETS.idFromName("t-a/bud_1");
  const b = env.BUDGETS.idFromName("t-b/bud_1");
  expect(a.equals(b)).toBe(false);
});
