import { describe, expect, it } from "vitest";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * Items that store nothing (reasoning items, which a thread does not keep): adding only those answered
 * 400 BEM-035 about "ops.0.messages", a state operation the caller never sent, and creating a conversation
 * with only those made an empty one as if they were stored. Both are 400 BEM-011 saying what is kept.
 */
const tenant = tenantForRuns();
const reasoning = { type: "reasoning", id: "rs_1", summary: [] };

async function errorOf(res: Response) {
  const j = (await res.json()) as { error: { code: string; message: string } };
  return { status: res.status, ...j.error };
}

describe("conversation items that store nothing", () => {
  it("adding only reasoning items is 400 BEM-011 naming items, and the conversation keeps what it had", async () => {
    const conv = (await (
      await api("/v1/conversations", { key: tenant().adminKey, body: { items: [{ type: "message", role: "user", content: "hi" }] } })
    ).json()) as {
      id: string;
    };
    const e = await errorOf(await api(`/v1/conversations/${conv.id}/items`, { key: tenant().adminKey, body: { items: [reasoning] } }));
    expect(e).toMatchObject({ status: 400, code: "BEM-011" });
    expect(e.message).toContain("items");
    expect(e.message).not.toContain("ops.");
    const items = (await (await api(`/v1/conversations/${conv.id}/items`, { key: tenant().adminKey })).json()) as { data: unknown[] };
    expect(items.data).toHaveLength(1);
  });

  it("creating a conversation with only reasoning items is 400 BEM-011, and no conversation is made", async () => {
    const before = (await (await api("/v1/threads?limit=100", { key: tenant().adminKey })).json()) as { threads: unknown[] };
    const e = await errorOf(await api("/v1/conversations", { key: tenant().adminKey, body: { items: [reasoning] } }));
    expect(e).toMatchObject({ status: 400, code: "BEM-011" });
    const after = (await (await api("/v1/threads?limit=100", { key: tenant().adminKey })).json()) as { threads: unknown[] };
    expect(after.threads).toHaveLength(before.threads.length);
  });

  it("a reasoning item beside a message is left out, the message stored", async () => {
    const res = await api("/v1/conversations", { key: tenant().adminKey, body: { items: [reasoning, { type: "message", role: "user", content: "kept" }] } });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    const items = (await (await api(`/v1/conversations/${id}/items`, { key: tenant().adminKey })).json()) as { data: { type: string }[] };
    expect(items.data.map((i) => i.type)).toEqual(["message"]);
  });
});
