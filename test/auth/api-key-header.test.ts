import { Client } from "@langchain/langgraph-sdk";
import { describe, expect, it } from "vitest";
import { BASE_URL, workerFetch } from "../langgraph/support";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant } from "../support/tenants";

/**
 * Issue 22 item 3 and issue 24 item 10: Anthropic's SDK, Claude Code and LangGraph's SDK send the
 * key in `x-api-key`. Every /v1 route takes it there as well as in `Authorization: Bearer`; two
 * different keys in the two headers are a coded 401, never "whichever header wins".
 */
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe("the key in x-api-key", () => {
  it("authenticates every /v1 route as a bearer key does (models, facts, chat, threads, admin)", async () => {
    const t = await createTenant();
    expect((await api("/v1/models", { headers: { "x-api-key": t.memberKey } })).status).toBe(200);
    expect((await api("/v1/memory/facts?scope=user:u1", { headers: { "x-api-key": t.adminKey } })).status).toBe(200);
    fakeOpenAI().reply("hello");
    const chat = await api("/v1/chat/completions", {
      headers: { "x-api-key": t.adminKey },
      body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
    });
    expect(chat.status).toBe(200);
    // The role still comes from the key: a member key in x-api-key may not manage keys.
    const denied = await api(`/v1/admin/tenants/${t.tenant}/keys`, { headers: { "x-api-key": t.memberKey } });
    expect(denied.status).toBe(403);
    // An unknown key in x-api-key is the same 401 BEM-021 as in Authorization.
    const unknown = await api("/v1/models", { headers: { "x-api-key": "ew_not_a_real_key_000000000000000000" } });
    expect(unknown.status).toBe(401);
    expect(await codeOf(unknown)).toBe("BEM-021");
  });

  it("the same key in both headers is fine; two different keys are 401 BEM-170, even if both are valid", async () => {
    const t = await createTenant();
    const same = await api("/v1/models", { key: t.adminKey, headers: { "x-api-key": t.adminKey } });
    expect(same.status).toBe(200);
    const two = await api("/v1/models", { key: t.adminKey, headers: { "x-api-key": t.memberKey } });
    expect(two.status).toBe(401);
    expect(await codeOf(two)).toBe("BEM-170");
    // Unmatched routes check the key first too.
    const unmatched = await api("/v1/nowhere", { key: t.adminKey, headers: { "x-api-key": t.memberKey } });
    expect(await codeOf(unmatched)).toBe("BEM-170");
  });

  it("no key in either header is 401 BEM-020 naming both", async () => {
    const res = await api("/v1/models", { headers: { "x-api-key": "  " } });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("BEM-020");
    expect(body.error.message).toContain("x-api-key");
  });

  it("LangGraph's SDK `new Client({ apiUrl, apiKey })` works unchanged (it sends x-api-key)", async () => {
    const t = await createTenant();
    const client = new Client({ apiUrl: `${BASE_URL}/v1/langgraph`, apiKey: t.adminKey, callerOptions: { fetch: workerFetch(), maxRetries: 0 } });
    await client.store.putItem(["organization", "acme"], "k", { text: "v" });
    expect((await client.store.getItem(["organization", "acme"], "k"))?.value).toEqual({ text: "v" });
  });
});
