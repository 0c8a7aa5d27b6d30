import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createKey, createTenant } from "../support/tenants";

/**
 * A paging cursor this API never issued is 400 BEM-011 naming the parameter, never an empty or
 * arbitrary page: cursors carry a check of the list they page and their position (a checksum, not
 * a secret: a page is always read with the key's own grants). Before, any well-formed one
 * ("123~x", a thread id as threads_after) was taken and answered with whatever sorted after it.
 */
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

describe("cursors this API never issued are 400 BEM-011", () => {
  it("the cross-thread LangGraph list: next_threads_after goes back in; a made-up or edited threads_after is refused", async () => {
    const t = await createTenant();
    const ids = Array.from({ length: 120 }, (_, i) => `cur-${String(i).padStart(3, "0")}`);
    await env.DB.batch(ids.map((id) => env.DB.prepare("INSERT INTO langgraph_threads (tenant_id, thread_id, created_at) VALUES (?, ?, 0)").bind(t.tenant, id)));
    const list = (body: unknown) => api("/v1/langgraph/list", { key: t.adminKey, body });
    const first = (await (await list({ threads_after: "" })).json()) as { next_threads_after?: string };
    expect(first.next_threads_after).toBeDefined();
    expect((await list({ threads_after: first.next_threads_after })).status).toBe(200);
    for (const made of ["cur-099", "cur-050", `${first.next_threads_after}x`, first.next_threads_after!.replace("099", "098")]) {
      const res = await list({ threads_after: made });
      expect(res.status, made).toBe(400);
      const error = await codeOf(res);
      expect(error.code).toBe("BEM-011");
      expect(error.message).toContain("threads_after");
    }
  });

  it("GET /v1/threads (before) and the admin's key list (cursor): issued cursors page on, made-up ones and those of another list are refused", async () => {
    const t = await createTenant();
    for (let i = 0; i < 3; i++) await createKey(t.tenant, { role: "member", scopes: ["session:*"] });
    for (let i = 0; i < 3; i++) await api(`/v1/threads/cur-${i}/state`, { key: t.adminKey, body: { ops: [{ op: "set", channel: "n", value: i }] } });
    const keys = (await (await api(`/v1/admin/tenants/${t.tenant}/keys?limit=1`, { key: t.adminKey })).json()) as { next_cursor: string };
    expect(keys.next_cursor).toBeTruthy();
    expect((await api(`/v1/admin/tenants/${t.tenant}/keys?limit=1&cursor=${encodeURIComponent(keys.next_cursor)}`, { key: t.adminKey })).status).toBe(200);
    const threads = (await (await api("/v1/threads?limit=1", { key: t.adminKey })).json()) as { next_before: string };
    expect(threads.next_before).toBeTruthy();
    expect((await api(`/v1/threads?limit=1&before=${encodeURIComponent(threads.next_before)}`, { key: t.adminKey })).status).toBe(200);
    for (const [path, param, made] of [
      [`/v1/admin/tenants/${t.tenant}/keys?limit=1&cursor=`, "cursor", "1700000000000~key_x"],
      [`/v1/admin/tenants/${t.tenant}/keys?limit=1&cursor=`, "cursor", threads.next_before],
      ["/v1/threads?limit=1&before=", "before", "1700000000000~cur-1"],
      ["/v1/threads?limit=1&before=", "before", keys.next_cursor],
    ] as const) {
      const res = await api(`${path}${encodeURIComponent(made)}`, { key: t.adminKey });
      expect(res.status, `${path}${made}`).toBe(400);
      const error = await codeOf(res);
      expect(error.code).toBe("BEM-011");
      expect(error.message).toContain(param);
    }
  });
});
