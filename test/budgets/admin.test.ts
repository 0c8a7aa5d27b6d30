import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createKey, createTenant } from "../support/tenants";

const path = (tenant: string, id?: string) => `/v1/admin/tenants/${tenant}/budgets${id ? `/${id}` : ""}`;
type Standing = {
  id: string;
  kind: string;
  target: string | null;
  limit_usd: number;
  window: string | null;
  spent_usd: number;
  remaining_usd: number;
  resets_at: string | null;
};

describe("budget admin routes", () => {
  it("a tenant admin creates tenant, key and thread budgets, lists, reads, changes and deletes them", async () => {
    const t = await createTenant();
    const made: Standing[] = [];
    for (const body of [
      { kind: "tenant", limit_usd: 100, window: "month", anchor: "2026-01-01T00:00:00+01:00", time_zone: "Europe/Paris" },
      { kind: "key", target: t.memberKeyId, limit_usd: 5 },
      { kind: "thread", target: "ticket-7", limit_usd: 0.5, window: "day" },
    ]) {
      const res = await api(path(t.tenant), { key: t.adminKey, body });
      expect(res.status).toBe(201);
      made.push((await res.json()) as Standing);
    }
    expect(made.map((b) => [b.kind, b.target, b.limit_usd, b.spent_usd, b.remaining_usd])).toEqual([
      ["tenant", null, 100, 0, 100],
      ["key", t.memberKeyId, 5, 0, 5],
      ["thread", "ticket-7", 0.5, 0, 0.5],
    ]);
    // A monthly window anchored at midnight on the 1st, Paris time, resets at the next 1st's midnight there.
    expect(made[0]!.resets_at).toMatch(/^\d{4}-\d{2}-(01T00:00:00\.000Z|3[01]T2[23]:00:00\.000Z)$/);
    expect(made[1]!.resets_at).toBeNull();

    const list = (await (await api(path(t.tenant), { key: t.adminKey })).json()) as { budgets: Standing[] };
    expect(list.budgets.map((b) => b.id)).toEqual(made.map((b) => b.id));

    const patched = await api(path(t.tenant, made[1]!.id), { method: "PATCH", key: t.adminKey, body: { limit_usd: 7, window: "week" } });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ limit_usd: 7, window: "week", remaining_usd: 7 });
    expect(await (await api(path(t.tenant, made[1]!.id), { key: t.adminKey })).json()).toMatchObject({ limit_usd: 7 });

    expect((await api(path(t.tenant, made[2]!.id), { method: "DELETE", key: t.adminKey })).status).toBe(200);
    const gone = await api(path(t.tenant, made[2]!.id), { key: t.adminKey });
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ error: { code: "BEM-231" } });
  });

  it("a member key cannot create, raise, list or delete a budget: 403, nothing changed", async () => {
    const t = await createTenant();
    const own = (await (await api(path(t.tenant), { key: t.adminKey, body: { kind: "key", target: t.memberKeyId, limit_usd: 1 } })).json()) as Standing;
    const tries = [
      api(path(t.tenant), { key: t.memberKey, body: { kind: "tenant", limit_usd: 1000 } }),
      api(path(t.tenant, own.id), { method: "PATCH", key: t.memberKey, body: { limit_usd: 1000 } }),
      api(path(t.tenant, own.id), { method: "DELETE", key: t.memberKey }),
      api(path(t.tenant), { key: t.memberKey }),
    ];
    for (const res of await Promise.all(tries)) {
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: { code: "BEM-022" } });
    }
    const list = (await (await api(path(t.tenant), { key: t.adminKey })).json()) as { budgets: Standing[] };
    expect(list.budgets.map((b) => [b.id, b.limit_usd])).toEqual([[own.id, 1]]);
  });

  it("another tenant's budget is unreachable: its path is 403, its id under one's own tenant 404", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const budget = (await (await api(path(a.tenant), { key: a.adminKey, body: { kind: "tenant", limit_usd: 3 } })).json()) as Standing;
    for (const res of [
      await api(path(a.tenant, budget.id), { key: b.adminKey }),
      await api(path(a.tenant, budget.id), { method: "PATCH", key: b.adminKey, body: { limit_usd: 9 } }),
      await api(path(a.tenant), { key: b.adminKey, body: { kind: "tenant", limit_usd: 9 } }),
    ]) {
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: { code: "BEM-022", message: "An admin key manages only its own tenant" } });
    }
    for (const res of [
      await api(path(b.tenant, budget.id), { key: b.adminKey }),
      await api(path(b.tenant, budget.id), { method: "PATCH", key: b.adminKey, body: { limit_usd: 9 } }),
      await api(path(b.tenant, budget.id), { method: "DELETE", key: b.adminKey }),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: "BEM-231" } });
    }
    // A key budget cannot name another tenant's key.
    const foreign = await api(path(b.tenant), { key: b.adminKey, body: { kind: "key", target: a.memberKeyId, limit_usd: 1 } });
    expect(foreign.status).toBe(404);
    expect(await (await api(path(a.tenant, budget.id), { key: a.adminKey })).json()).toMatchObject({ limit_usd: 3 });
  });

  it("bad budgets are a coded 4xx and create nothing", async () => {
    const t = await createTenant();
    const future = new Date(Date.now() + 86_400_000).toISOString();
    const cases: [unknown, number, string][] = [
      [{ kind: "tenant", limit_usd: 0 }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: -5 }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: "NaN" }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1e12 }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, window: "fortnight" }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, window: "day", anchor: future }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, window: "day", anchor: "yesterday" }, 400, "BEM-011"],
      // Each call counts windows from the anchor: one in year 1 cost a reserve ~40 s of CPU (and Date.UTC read years 0-99 as 19xx).
      [{ kind: "tenant", limit_usd: 1, window: "day", anchor: "0001-01-31T00:00:00Z", time_zone: "America/New_York" }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, window: "week", anchor: "1999-12-31T23:59:59Z" }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, time_zone: "Mars/Olympus_Mons" }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, target: "x" }, 400, "BEM-011"],
      [{ kind: "thread", limit_usd: 1 }, 400, "BEM-011"],
      [{ kind: "thread", target: "..", limit_usd: 1 }, 400, "BEM-030"],
      [{ kind: "key", target: "key_nope", limit_usd: 1 }, 404, "BEM-052"],
      [{ kind: "tag", target: "user", limit_usd: 1 }, 400, "BEM-011"],
      [{ kind: "tenant", limit_usd: 1, per: "user" }, 400, "BEM-011"],
    ];
    for (const [body, status, code] of cases) {
      const res = await api(path(t.tenant), { key: t.adminKey, body });
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), status]);
      expect(await res.json()).toMatchObject({ error: { code } });
    }
    const ok = (await (await api(path(t.tenant), { key: t.adminKey, body: { kind: "tenant", limit_usd: 2 } })).json()) as Standing;
    const badPatch = await api(path(t.tenant, ok.id), { method: "PATCH", key: t.adminKey, body: { limit_usd: 0 } });
    expect(badPatch.status).toBe(400);
    const list = (await (await api(path(t.tenant), { key: t.adminKey })).json()) as { budgets: Standing[] };
    expect(list.budgets.map((b) => b.limit_usd)).toEqual([2]);
  });

  it("at most 100 budgets a tenant, also when the creates race: the rest are 413 BEM-232 and stored nowhere", async () => {
    const t = await createTenant();
    // The count was read before the insert, so concurrent creates all passed it (125 of 130 stored, 100 listed).
    const created = await Promise.all(Array.from({ length: 120 }, () => api(path(t.tenant), { key: t.adminKey, body: { kind: "tenant", limit_usd: 1 } })));
    const refused = created.filter((r) => r.status === 413);
    expect([created.filter((r) => r.status === 201).length, refused.length]).toEqual([100, 20]);
    for (const r of refused) expect(await r.json()).toMatchObject({ error: { code: "BEM-232" } });
    const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM budgets WHERE tenant_id = ?").bind(t.tenant).first<{ n: number }>();
    expect(stored?.n).toBe(100);
  });

  it("/v1/usage shows the budgets over the caller: an admin all of the tenant's, a member the tenant's and its own key's", async () => {
    const t = await createTenant();
    const other = await createKey(t.tenant, { role: "member" });
    const ids: Record<string, string> = {};
    for (const [name, body] of [
      ["tenant", { kind: "tenant", limit_usd: 10, thresholds: [0.5], alert_url: "https://alerts.example/hook?token=s3cret" }],
      ["member", { kind: "key", target: t.memberKeyId, limit_usd: 2 }],
      ["other", { kind: "key", target: other.id, limit_usd: 3 }],
      ["thread", { kind: "thread", target: "th-1", limit_usd: 1 }],
    ] as const)
      ids[name] = ((await (await api(path(t.tenant), { key: t.adminKey, body })).json()) as Standing).id;
    // Largest budget first (budgets made in one millisecond list in id order).
    const seen = async (key: string) =>
      ((await (await api("/v1/usage", { key })).json()) as { budgets: Standing[] }).budgets
        .map((b) => [b.id, b.spent_usd, b.remaining_usd])
        .sort((a, b) => Number(b[2]) - Number(a[2]));
    expect(await seen(t.adminKey)).toEqual([
      [ids.tenant, 0, 10],
      [ids.other, 0, 3],
      [ids.member, 0, 2],
      [ids.thread, 0, 1],
    ]);
    expect(await seen(t.memberKey)).toEqual([
      [ids.tenant, 0, 10],
      [ids.member, 0, 2],
    ]);
    // Where threshold events go may carry a token: only a key that manages budgets reads it.
    const alertUrl = async (key: string) =>
      ((await (await api("/v1/usage", { key })).json()) as { budgets: { id: string; alert_url: string | null }[] }).budgets.find((b) => b.id === ids.tenant)
        ?.alert_url;
    expect(await alertUrl(t.adminKey)).toBe("https://alerts.example/hook?token=s3cret");
    expect(await alertUrl(t.memberKey)).toBeNull();
  });

  it("a window anchored at a fraction of a second resets at that same fraction", async () => {
    const t = await createTenant();
    const anchor = "2026-01-01T02:53:19.549Z";
    const res = await api(path(t.tenant), { key: t.adminKey, body: { kind: "tenant", limit_usd: 1, window: "day", anchor } });
    const b = (await res.json()) as Standing & { window_start: string };
    expect(b.window_start.slice(10)).toBe("T02:53:19.549Z");
    expect(b.resets_at?.slice(10)).toBe("T02:53:19.549Z");
  });
});
