import { describe, expect, it } from "vitest";
import { api, createTenant } from "../support/tenants";

type Page = { threads: { thread_id: string }[]; next_before: string | null };

// Issue 24.16: the inspector's thread search asks the server, so it finds threads past the first page.
describe("GET /v1/threads?query=: ids containing the text", () => {
  it("filters by id substring (any case) before the limit, and pages within the filter", async () => {
    const t = await createTenant();
    for (const id of ["support-ada", "support-bob", "billing-ada", "thr_x1", "SUPPORT-cy"])
      expect((await api(`/v1/threads/${id}/state`, { key: t.adminKey, body: { ops: [{ op: "set", channel: "topic", value: id }] } })).status).toBe(200);
    const list = async (q: string) => (await (await api(`/v1/threads?${q}`, { key: t.adminKey })).json()) as Page;
    expect((await list("query=support")).threads.map((x) => x.thread_id).sort()).toEqual(["SUPPORT-cy", "support-ada", "support-bob"]);
    expect((await list("query=ADA")).threads.map((x) => x.thread_id).sort()).toEqual(["billing-ada", "support-ada"]);
    const first = await list("query=support&limit=2");
    expect(first.threads).toHaveLength(2);
    const rest = await list(`query=support&limit=2&before=${encodeURIComponent(first.next_before!)}`);
    expect(rest.threads).toHaveLength(1);
    expect(rest.next_before).toBeNull();
    expect((await api(`/v1/threads?query=${"x".repeat(129)}`, { key: t.adminKey })).status).toBe(400);
  });
});
