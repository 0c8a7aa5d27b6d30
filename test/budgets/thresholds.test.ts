import { describe, expect, it } from "vitest";
import { REPLAY_WINDOW_SECONDS, verifyBudgetEvent } from "../../src/webhooks/signature";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns } from "../support/runs";
import { api, createKey, type TestTenant } from "../support/tenants";
import { mockUpstream } from "../support/upstream";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 35, soft thresholds: fractions of a budget's limit that each send a signed event once per window
 * (scheme b1, its own signing domain beside the callbacks) and show in `/v1/usage`.
 */
const tenant = tenantForRuns();
const ALERTS = "https://alerts.example";
type Reached = { threshold: number; event_id: string; spent_usd: number };

/** A receiver of budget events: every request it got, its headers and raw body. */
function receiver() {
  const got: { headers: Headers; body: string }[] = [];
  mockUpstream(ALERTS, async (req) => {
    got.push({ headers: new Headers(req.headers), body: await req.text() });
    return new Response(null, { status: 204 });
  });
  return got;
}

const path = (t: TestTenant) => `/v1/admin/tenants/${t.tenant}/budgets`;
// gpt-4o-mini at 1,000 + 1,000 tokens: 750 micro-USD a call; max_tokens 1,000 reserves about 600.
const chat = (key: string) =>
  api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] } });

describe("soft thresholds", () => {
  it("50%, 80% and 100% each fire once, signed, with a replay refused; /v1/usage shows them", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const got = receiver();
    fakeOpenAI().otherwise({ text: "ok", usage: { prompt_tokens: 1000, completion_tokens: 1000 } });
    const res = await api(path(t), {
      key: t.adminKey,
      body: { kind: "key", target: key.id, limit_usd: 0.003, thresholds: [1, 0.5, 0.8], alert_url: `${ALERTS}/budget` },
    });
    expect(res.status).toBe(201);
    const b = (await res.json()) as { id: string; alert_secret: string; thresholds: number[] };
    expect(b.thresholds).toEqual([0.5, 0.8, 1]);
    expect(b.alert_secret).toMatch(/^bsec_[0-9a-f]{64}$/);
    // 750, 1,500 (50%), 2,250, 3,000 (80% and 100%) micro-USD; then refused, twice: nothing fires again.
    for (let i = 0; i < 4; i++) expect((await chat(key.key)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await chat(key.key)).status).toBe(402);
    await waitFor("three events", async () => (got.length >= 3 ? true : undefined));
    await new Promise((r) => setTimeout(r, 300)); // and no fourth
    expect(got.length).toBe(3);

    const seen = new Set<string>();
    const events: { id: string; threshold: number; spent_usd: number; budget: { id: string } }[] = [];
    for (const req of got) {
      expect(await verifyBudgetEvent(b.alert_secret, req.headers, req.body, seen)).toBe(true);
      events.push(JSON.parse(req.body));
    }
    expect(events.map((e) => e.threshold).sort()).toEqual([0.5, 0.8, 1]);
    expect(events.every((e) => e.budget.id === b.id)).toBe(true);
    expect(events.find((e) => e.threshold === 0.5)?.spent_usd).toBe(0.0015);

    // A replay of an accepted event is refused; so is a changed body, another secret, another event id, and an old timestamp.
    const first = got[0]!;
    const body = first.body;
    expect(await verifyBudgetEvent(b.alert_secret, first.headers, body, seen)).toBe(false);
    const fresh = new Set<string>();
    expect(await verifyBudgetEvent(b.alert_secret, first.headers, body.replace("budget.threshold", "budget.thresholds"), fresh)).toBe(false);
    expect(await verifyBudgetEvent(`bsec_${"0".repeat(64)}`, first.headers, body, fresh)).toBe(false);
    const renamed = new Headers(first.headers);
    renamed.set("x-edgeweave-event", "bev_other");
    expect(await verifyBudgetEvent(b.alert_secret, renamed, body, fresh)).toBe(false);
    const later = (Number(first.headers.get("x-edgeweave-timestamp")) + REPLAY_WINDOW_SECONDS + 1) * 1000;
    expect(await verifyBudgetEvent(b.alert_secret, first.headers, body, fresh, later)).toBe(false);
    expect(await verifyBudgetEvent(b.alert_secret, first.headers, body, fresh)).toBe(true);

    // /v1/usage shows each reached threshold with the id of the event sent for it.
    const usage = (await (await api("/v1/usage", { key: key.key })).json()) as { budgets: { id: string; thresholds_reached: Reached[] }[] };
    const reached = usage.budgets.find((x) => x.id === b.id)!.thresholds_reached;
    expect(reached.map((r) => [r.threshold, r.event_id])).toEqual([...events].sort((x, y) => x.threshold - y.threshold).map((e) => [e.threshold, e.id]));
    // The secret is shown once.
    expect(JSON.stringify(await (await api(`${path(t)}/${b.id}`, { key: t.adminKey })).json())).not.toContain(b.alert_secret);
  });

  it("a new window fires them again, once", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const got = receiver();
    fakeOpenAI().otherwise({ text: "ok", usage: { prompt_tokens: 1000, completion_tokens: 1000 } });
    const anchor = new Date(Date.now() - 86_400_000 + 3_000).toISOString();
    const res = await api(path(t), {
      key: t.adminKey,
      body: { kind: "key", target: key.id, limit_usd: 0.003, window: "day", anchor, thresholds: [0.2], alert_url: `${ALERTS}/budget` },
    });
    const b = (await res.json()) as { resets_at: string };
    expect((await chat(key.key)).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200);
    await waitFor("the first window's event", async () => (got.length === 1 ? true : undefined));
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(b.resets_at) - Date.now()) + 100));
    expect((await chat(key.key)).status).toBe(200);
    await waitFor("the second window's event", async () => (got.length === 2 ? true : undefined));
    const [a, c] = got.map((r) => JSON.parse(r.body) as { id: string; window_start: string });
    expect(a!.id).not.toBe(c!.id);
    expect(Date.parse(c!.window_start)).toBe(Date.parse(b.resets_at));
  });

  it("a refusal reaches 100% though less is spent: the budget has no room left for a call", async () => {
    const t = tenant();
    const key = await createKey(t.tenant, { role: "admin" });
    const got = receiver();
    fakeOpenAI().otherwise({ text: "ok", usage: { prompt_tokens: 1000, completion_tokens: 1000 } });
    const body = { kind: "key", target: key.id, limit_usd: 0.001, thresholds: [1], alert_url: `${ALERTS}/budget` };
    expect((await api(path(t), { key: t.adminKey, body })).status).toBe(201);
    expect((await chat(key.key)).status).toBe(200); // 750 of 1,000 micro-USD
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toEqual([]);
    expect((await chat(key.key)).status).toBe(402); // about 600 more do not fit
    expect((await chat(key.key)).status).toBe(402);
    await waitFor("the event", async () => (got.length === 1 ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    expect(got.length).toBe(1);
    expect(JSON.parse(got[0]!.body)).toMatchObject({ threshold: 1, spent_usd: 0.00075, limit_usd: 0.001 });
  });

  it("bad thresholds or alert URLs are refused with a coded 400, and nothing is made", async () => {
    const t = tenant();
    const count = async () => ((await (await api(path(t), { key: t.adminKey })).json()) as { budgets: unknown[] }).budgets.length;
    const before = await count();
    const base = { kind: "tenant", limit_usd: 1 };
    for (const [extra, code] of [
      [{ thresholds: [0], alert_url: `${ALERTS}/x` }, "BEM-011"],
      [{ thresholds: [1.5], alert_url: `${ALERTS}/x` }, "BEM-011"],
      [{ thresholds: [0.5, 0.5], alert_url: `${ALERTS}/x` }, "BEM-011"],
      [{ thresholds: Array.from({ length: 11 }, (_, i) => (i + 1) / 11), alert_url: `${ALERTS}/x` }, "BEM-011"],
      [{ thresholds: [0.5] }, "BEM-011"],
      [{ alert_url: `${ALERTS}/x` }, "BEM-011"],
      [{ thresholds: [0.5], alert_url: "https://user:pw@alerts.example/x" }, "BEM-094"],
    ] as const) {
      const res = await api(path(t), { key: t.adminKey, body: { ...base, ...extra } });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
    }
    expect(await count()).toBe(before);
  });
});
