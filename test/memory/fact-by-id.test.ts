import { describe, expect, it } from "vitest";
import { tenantForRuns } from "../support/runs";
import { api, createKey } from "../support/tenants";

/**
 * A fact by id (its history, forgetting it) for a key that cannot read its scope: the 403 said the fact
 * was there and named its scope ("Scope 'user:bob' is outside this key's grants"), while the memory
 * tools' forget by id answers such a fact as absent. Now it is 404 BEM-061, as a missing one is, and
 * nothing is deleted.
 */
const tenant = tenantForRuns({ memberScopes: ["session:fb-*"] });

const remember = async (key: string, scope: string, text: string) => {
  const res = await api("/v1/memory/facts", { key, body: { scope, kind: "note", text } });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { id: string }).id;
};
const errorOf = async (res: Response) => ({ status: res.status, ...((await res.json()) as { error: { code: string; message: string } }).error });

describe("a fact by id in a scope the key cannot read", () => {
  it("history and forget answer 404 BEM-061 as for a missing id, without the scope's name, and the fact stays", async () => {
    const id = await remember(tenant().adminKey, "user:bob", "Bob's door code is 4321.");
    const missing = await errorOf(await api("/v1/memory/facts/01M8TN3Z41000000ZZZZ/history", { key: tenant().memberKey }));
    for (const [method, path] of [
      ["GET", `/v1/memory/facts/${id}/history`],
      ["DELETE", `/v1/memory/facts/${id}`],
    ] as const) {
      const e = await errorOf(await api(path, { method, key: tenant().memberKey }));
      expect(e, `${method} ${path}`).toEqual(missing);
      expect(e.message).not.toContain("user:bob");
    }
    const still = await api(`/v1/memory/facts/${id}/history`, { key: tenant().adminKey });
    expect(still.status).toBe(200);
  });

  it("a key granted the scope reads and forgets it", async () => {
    const bob = await createKey(tenant().tenant, { role: "member", scopes: ["user:bob"] });
    const id = await remember(tenant().adminKey, "user:bob", "Bob prefers tea.");
    expect((await api(`/v1/memory/facts/${id}/history`, { key: bob.key })).status).toBe(200);
    expect((await api(`/v1/memory/facts/${id}`, { method: "DELETE", key: bob.key })).status).toBe(200);
  });
});
