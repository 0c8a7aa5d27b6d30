import { exports } from "cloudflare:workers";

/** The operator key the test worker runs with (vitest.config.ts → OPERATOR_KEY). */
export const OPERATOR_KEY = "test-operator-key";

/** Headers for a JSON request with `Authorization: Bearer <key>`. */
export const authHeaders = (key: string, extra: Record<string, string> = {}): Record<string, string> => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
  ...extra,
});

export const operatorHeaders = (): Record<string, string> => authHeaders(OPERATOR_KEY);

/** Calls the worker. `key` adds the bearer header; `body` is sent as JSON. */
export async function api(path: string, init: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(init.key ? authHeaders(init.key) : {}), ...(init.headers ?? {}) };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return exports.default.fetch(`http://x${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
}

export type TestKey = { id: string; key: string };

/** Creates a key for a tenant through the operator routes. */
export async function createKey(tenant: string, body: { role: "admin" | "member"; scopes?: string[]; name?: string }): Promise<TestKey> {
  const res = await api(`/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR_KEY, body });
  if (res.status !== 201) throw new Error(`creating a key for ${tenant} failed: ${res.status} ${await res.text()}`);
  const { id, key } = (await res.json()) as TestKey;
  return { id, key };
}

export type TestTenant = {
  tenant: string;
  adminKey: string;
  adminKeyId: string;
  memberKey: string;
  memberKeyId: string;
  /** Bearer + JSON headers for a key (default: the admin key). */
  authHeaders(key?: string): Record<string, string>;
};

/**
 * A fresh tenant with one admin key and one member key, made through the operator
 * routes. Storage is per test file, so ids are random unless you pass one.
 */
export async function createTenant(opts: string | { id?: string; name?: string; memberScopes?: string[] } = {}): Promise<TestTenant> {
  const o = typeof opts === "string" ? { id: opts } : opts;
  const tenant = o.id ?? `t-${crypto.randomUUID().slice(0, 12)}`;
  const res = await api("/v1/admin/tenants", { key: OPERATOR_KEY, body: { id: tenant, name: o.name } });
  if (res.status !== 201) throw new Error(`creating tenant ${tenant} failed: ${res.status} ${await res.text()}`);
  const admin = await createKey(tenant, { role: "admin", name: "test admin" });
  const member = await createKey(tenant, { role: "member", scopes: o.memberScopes ?? [], name: "test member" });
  return {
    tenant,
    adminKey: admin.key,
    adminKeyId: admin.id,
    memberKey: member.key,
    memberKeyId: member.id,
    authHeaders: (key = admin.key) => authHeaders(key),
  };
}
