import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { api, createKey, createTenant, OPERATOR_KEY } from "../support/tenants";

const code = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe("bearer auth on /v1", () => {
  it("a missing or malformed Authorization header is 401 BEM-020", async () => {
    const headerSets: Record<string, string>[] = [
      {},
      { authorization: "" },
      { authorization: "Bearer" },
      { authorization: "Bearer   " },
      { authorization: `Basic ${btoa("a:b")}` },
    ];
    for (const headers of headerSets) {
      const res = await api("/v1/memory/facts?scope=system", { headers });
      expect(res.status).toBe(401);
      expect(await code(res)).toBe("BEM-020");
    }
  });

  it("an unknown key is 401 BEM-021, whatever its shape", async () => {
    for (const key of ["ew_" + "A".repeat(43), "nope", "test-operator-key2", "test-operator-ke", "' OR 1=1 --", "ew_" + "x".repeat(5000)]) {
      const res = await api("/v1/memory/facts?scope=system", { headers: { authorization: `Bearer ${key}` } });
      expect(res.status, key).toBe(401);
      expect(await code(res)).toBe("BEM-021");
    }
  });

  it("health and the OpenAPI document need no key", async () => {
    expect((await api("/health")).status).toBe(200);
    expect((await api("/openapi.json")).status).toBe(200);
  });

  it("webhook deliveries are exempt from bearer auth (their signature is the credential)", async () => {
    const res = await api("/v1/webhooks/some-hook", { body: {} });
    expect(res.status).not.toBe(401);
  });
});

describe("key lifecycle", () => {
  it("create, use, revoke, then 401 on the very next request", async () => {
    const t = await createTenant();
    const k = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"], name: "ci" });
    expect(k.key).toMatch(/^ew_[A-Za-z0-9_-]{43}$/);

    const used = await api("/v1/memory/facts?scope=organization:acme", { key: k.key });
    expect(used.status).toBe(200);

    const revoked = await api(`/v1/admin/tenants/${t.tenant}/keys/${k.id}`, { method: "DELETE", key: OPERATOR_KEY });
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as { revoked_at: number | null }).revoked_at).toEqual(expect.any(Number));

    const after = await api("/v1/memory/facts?scope=organization:acme", { key: k.key });
    expect(after.status).toBe(401);
    expect(await code(after)).toBe("BEM-021");
    // Other keys of the tenant are unaffected.
    expect((await api("/v1/memory/facts?scope=organization:acme", { key: t.adminKey })).status).toBe(200);
  });

  it("stores only a SHA-256 hash; listing shows neither key nor hash", async () => {
    const t = await createTenant();
    const row = await env.DB.prepare("SELECT key_hash FROM api_keys WHERE id = ?").bind(t.memberKeyId).first<{ key_hash: string }>();
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(t.memberKey)))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    expect(row?.key_hash).toBe(digest);
    const stored = JSON.stringify(await env.DB.prepare("SELECT * FROM api_keys WHERE tenant_id = ?").bind(t.tenant).all());
    expect(stored).not.toContain(t.memberKey);

    const list = await api(`/v1/admin/tenants/${t.tenant}/keys`, { key: OPERATOR_KEY });
    const text = await list.text();
    expect(list.status).toBe(200);
    expect(
      JSON.parse(text)
        .keys.map((k: { id: string }) => k.id)
        .sort(),
    ).toEqual([t.adminKeyId, t.memberKeyId].sort());
    for (const secret of [t.adminKey, t.memberKey, digest]) expect(text).not.toContain(secret);
    expect(text).not.toContain("key_hash");
  });

  it("pages a tenant's keys in creation order; every key appears exactly once; a foreign cursor is 400 BEM-011", async () => {
    const t = await createTenant();
    for (let i = 0; i < 5; i++) await api(`/v1/admin/tenants/${t.tenant}/keys`, { key: OPERATOR_KEY, body: { role: "member", scopes: [], name: `k${i}` } });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api(`/v1/admin/tenants/${t.tenant}/keys?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: t.adminKey });
      expect(res.status).toBe(200);
      const page = (await res.json()) as { keys: { id: string; name: string | null }[]; next_cursor: string | null };
      expect(page.keys.length).toBeLessThanOrEqual(3);
      seen.push(...page.keys.map((k) => k.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3); // 7 keys: the tenant's two plus five
    expect(new Set(seen).size).toBe(7);
    const all = await env.DB.prepare("SELECT id FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id").bind(t.tenant).all<{ id: string }>();
    expect(seen).toEqual(all.results.map((r) => r.id));
    const bad = await api(`/v1/admin/tenants/${t.tenant}/keys?cursor=nonsense`, { key: t.adminKey });
    expect(bad.status).toBe(400);
    expect(await code(bad)).toBe("BEM-011");
  });

  it("admin keys hold '*'; member keys hold exactly the validated grants", async () => {
    const t = await createTenant();
    const res = await api(`/v1/admin/tenants/${t.tenant}/keys`, {
      key: OPERATOR_KEY,
      body: { role: "member", scopes: ["docset:*", "organization:acme", "team"] },
    });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { scopes: string[] }).scopes).toEqual(["docset:*", "organization:acme", "team"]);
    for (const bad of [["Org:acme"], ["organization:a b"], ["system:x"], ["session"], [":x"], ["x:*:*"]]) {
      const r = await api(`/v1/admin/tenants/${t.tenant}/keys`, { key: OPERATOR_KEY, body: { role: "member", scopes: bad } });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(await code(r)).toBe("BEM-060");
    }
  });
});

describe("admin routes", () => {
  it("creates and lists tenants; a duplicate id is 409 BEM-050", async () => {
    const id = `dup-${crypto.randomUUID().slice(0, 8)}`;
    expect((await api("/v1/admin/tenants", { key: OPERATOR_KEY, body: { id, name: "Dup Inc" } })).status).toBe(201);
    const again = await api("/v1/admin/tenants", { key: OPERATOR_KEY, body: { id } });
    expect(again.status).toBe(409);
    expect(await code(again)).toBe("BEM-050");
    const list = (await (await api("/v1/admin/tenants?limit=1000", { key: OPERATOR_KEY })).json()) as { tenants: { id: string; name: string | null }[] };
    expect(list.tenants.filter((t) => t.id === id)).toEqual([expect.objectContaining({ id, name: "Dup Inc" })]);
  });

  it("pages the tenant list by id", async () => {
    for (let i = 0; i < 4; i++) await createTenant(`page-${i}`);
    const first = (await (await api("/v1/admin/tenants?limit=2&after=page-0", { key: OPERATOR_KEY })).json()) as {
      tenants: { id: string }[];
      next_after: string | null;
    };
    expect(first.tenants.map((t) => t.id)).toEqual(["page-1", "page-2"]);
    expect(first.next_after).toBe("page-2");
    const second = (await (await api(`/v1/admin/tenants?limit=2&after=${first.next_after}`, { key: OPERATOR_KEY })).json()) as { tenants: { id: string }[] };
    expect(second.tenants[0]?.id).toBe("page-3");
  });

  it("an `after` that is no tenant id (forged, misspelt) is 400 BEM-011, not a page that starts wherever it sorts", async () => {
    await createTenant(`after-${crypto.randomUUID().slice(0, 8)}`);
    for (const after of ["zzzz-no-such-tenant", "after-", "a:b", "~"]) {
      const res = await api(`/v1/admin/tenants?after=${encodeURIComponent(after)}`, { key: OPERATOR_KEY });
      expect(res.status, after).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("BEM-011");
      expect(body.error.message).toContain("next_after");
    }
    expect((await api("/v1/admin/tenants?after=&limit=1", { key: OPERATOR_KEY })).status).toBe(200);
  });

  it("rejects bad tenant ids (a colon would let tenant:thread names collide)", async () => {
    for (const id of ["", "a:b", "a b", "x".repeat(65), "ü"]) {
      const res = await api("/v1/admin/tenants", { key: OPERATOR_KEY, body: { id } });
      expect(res.status, id).toBe(400);
    }
  });

  it("tenant keys may not manage tenants: 403 BEM-022", async () => {
    const t = await createTenant();
    for (const key of [t.adminKey, t.memberKey]) {
      for (const [method, path, body] of [
        ["POST", "/v1/admin/tenants", { id: "evil" }],
        ["GET", "/v1/admin/tenants", undefined],
      ] as const) {
        const res = await api(path, { method, key, body });
        expect(res.status).toBe(403);
        expect(await code(res)).toBe("BEM-022");
      }
    }
  });

  it("a tenant admin manages its own tenant's keys, and no other tenant's", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const made = await api(`/v1/admin/tenants/${a.tenant}/keys`, { key: a.adminKey, body: { role: "member", scopes: ["docset:*"] } });
    expect(made.status).toBe(201);
    const { id } = (await made.json()) as { id: string };
    expect((await api(`/v1/admin/tenants/${a.tenant}/keys/${id}`, { method: "DELETE", key: a.adminKey })).status).toBe(200);

    for (const [method, path, body] of [
      ["POST", `/v1/admin/tenants/${b.tenant}/keys`, { role: "admin" }],
      ["GET", `/v1/admin/tenants/${b.tenant}/keys`, undefined],
      ["DELETE", `/v1/admin/tenants/${b.tenant}/keys/${b.adminKeyId}`, undefined],
    ] as const) {
      const res = await api(path, { method, key: a.adminKey, body });
      expect(res.status).toBe(403);
      expect(await code(res)).toBe("BEM-022");
    }
    // Members manage nothing, not even their own tenant.
    const m = await api(`/v1/admin/tenants/${a.tenant}/keys`, { key: a.memberKey, body: { role: "admin" } });
    expect(m.status).toBe(403);
    // B's admin key still works.
    expect((await api(`/v1/admin/tenants/${b.tenant}/keys`, { key: b.adminKey })).status).toBe(200);
  });

  it("unknown tenant 404 BEM-051; unknown or foreign key id 404 BEM-052", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const none = await api(`/v1/admin/tenants/no-such-tenant/keys`, { key: OPERATOR_KEY, body: { role: "member" } });
    expect(none.status).toBe(404);
    expect(await code(none)).toBe("BEM-051");
    // B's key id addressed under tenant A is not found, and B's key keeps working.
    const foreign = await api(`/v1/admin/tenants/${a.tenant}/keys/${b.memberKeyId}`, { method: "DELETE", key: OPERATOR_KEY });
    expect(foreign.status).toBe(404);
    expect(await code(foreign)).toBe("BEM-052");
    expect((await api("/v1/memory/facts?scope=system", { key: b.memberKey })).status).toBe(200);
  });
});

describe("admin bodies are strict", () => {
  it("a misspelt field is a coded 400 naming it, not silently ignored", async () => {
    const tenant = `strict-${crypto.randomUUID().slice(0, 8)}`;
    expect((await api("/v1/admin/tenants", { key: OPERATOR_KEY, body: { id: tenant } })).status).toBe(201);
    const res = await api(`/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR_KEY, body: { role: "member", grants: ["docset:*"] } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("BEM-011");
    expect(body.error.message).toContain("grants");
    const keys = (await (await api(`/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR_KEY })).json()) as { keys: unknown[] };
    expect(keys.keys).toEqual([]);
  });
});

describe("a request hashes the key it presents once", () => {
  it("one SHA-256 per authenticated request: the operator key's digest is kept per isolate, the tenant lookup reuses the presented key's", async () => {
    const t = await createTenant();
    await api("/v1/models", { key: t.adminKey }); // warm: the key resolved and cached, the operator digest computed
    const subtle = Object.getPrototypeOf(crypto.subtle) as SubtleCrypto;
    const spy = vi.spyOn(subtle, "digest");
    try {
      expect((await api("/v1/models", { key: t.adminKey })).status).toBe(200);
      expect((await api("/v1/models", { key: OPERATOR_KEY })).status).toBe(200);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});
