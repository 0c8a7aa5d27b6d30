import { describe, expect, it } from "vitest";
import { api, createKey, createTenant, OPERATOR_KEY } from "../support/tenants";
import { deliver, deliveryCount, registerHook } from "../webhooks/helpers";

// wrangler.toml: RATE_LIMIT_MEMBER 120/60 s, RATE_LIMIT_ADMIN 600/60 s, RATE_LIMIT_OPERATOR 3000/60 s, RATE_LIMIT_WEBHOOK 300/60 s;
// miniflare enforces the same bindings locally.
/** The bindings count in wall-clock-aligned minutes: start a counting test well inside one, so it cannot roll over midway. */
async function freshWindow(needMs = 15_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((r) => setTimeout(r, left + 100));
}

async function hammer(n: number, call: () => Promise<Response>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += 20) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, n - i) }, call));
    for (const r of batch) {
      statuses.push(r.status);
      await r.body?.cancel();
    }
  }
  return statuses;
}

describe("per-key rate limits", () => {
  it("a member key gets 120 calls a minute, then 429 BEM-024 with retry-after; other keys are unaffected", async () => {
    const t = await createTenant();
    await freshWindow();
    const statuses = await hammer(120, () => api("/v1/models", { key: t.memberKey }));
    expect(statuses.filter((s) => s === 200)).toHaveLength(120);

    const over = await api("/v1/models", { key: t.memberKey });
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("BEM-024");

    // Counted per key, not per tenant or role.
    const sibling = await createKey(t.tenant, { role: "member" });
    expect((await api("/v1/models", { key: sibling.key })).status).toBe(200);
    expect((await api("/v1/models", { key: t.adminKey })).status).toBe(200);
  });

  it("the operator key counts on its own binding (RATE_LIMIT_OPERATOR), past an admin's 600 a minute", async () => {
    await freshWindow();
    const statuses = await hammer(601, () => api("/v1/models", { key: OPERATOR_KEY }));
    expect(statuses.filter((s) => s === 200)).toHaveLength(601);
  });

  it("admin keys have the larger allowance", async () => {
    const t = await createTenant();
    await freshWindow();
    const statuses = await hammer(600, () => api("/v1/models", { key: t.adminKey }));
    expect(statuses.filter((s) => s === 200)).toHaveLength(600);
    expect((await api("/v1/models", { key: t.adminKey })).status).toBe(429);
  });

  it("LangGraph routes count on their own binding (RATE_LIMIT_LANGGRAPH), not the key's 120 a minute", async () => {
    const t = await createTenant();
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:rl"] });
    await freshWindow();
    const graph = await hammer(140, () => api("/v1/langgraph/threads/rl/get", { key: member.key, body: {} }));
    expect(graph.filter((s) => s === 200)).toHaveLength(140);
    // The key's own allowance is untouched by those calls.
    const other = await hammer(120, () => api("/v1/models", { key: member.key }));
    expect(other.filter((s) => s === 200)).toHaveLength(120);
    expect((await api("/v1/models", { key: member.key })).status).toBe(429);
  });

  it("webhook deliveries are limited per hook, counting only validly signed ones", async () => {
    const t = await createTenant();
    const hook = await registerHook(t);
    const other = await registerHook(t);
    await freshWindow();
    // Forged deliveries do not use up the hook's allowance.
    const forged = await hammer(50, () => deliver(hook, { nope: 1 }, { secret: "whsec_forged" }));
    expect(new Set(forged)).toEqual(new Set([401]));
    // Signed payloads without the configured fields are counted, then refused (422) without side effects.
    const signed = await hammer(300, () => deliver(hook, { nope: 1 }));
    expect(new Set(signed)).toEqual(new Set([422]));
    const over = await deliver(hook, { ticket: { id: "x", body: "y" } });
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("60");
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("BEM-024");
    expect(await deliveryCount(hook.id)).toBe(0);
    expect((await deliver(other, { ticket: { id: "x", body: "y" } })).status).toBe(202);
  });
});
