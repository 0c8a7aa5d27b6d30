import { Client } from "@langchain/langgraph-sdk";
import { describe, expect, it } from "vitest";
import { api, createTenant } from "../support/tenants";
import { BASE_URL, workerFetch } from "./support";

/**
 * Issue #24.10: the LangGraph SDK's Client pointed at the server's root, or calling the threads
 * API that edgeweave does not serve, gets a 404 that says what exists instead (not a bare 404,
 * not a 405 suggesting the checkpointer's DELETE).
 */
const clientAt = (apiUrl: string, apiKey: string) => new Client({ apiUrl, apiKey, callerOptions: { fetch: workerFetch(), maxRetries: 0 } });
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

describe("LangGraph SDK calls edgeweave does not serve", () => {
  it("apiUrl at the root: 404 pointing at /v1/langgraph", async () => {
    const t = await createTenant();
    await expect(clientAt(BASE_URL, t.adminKey).store.putItem(["docset", "d"], "k", { v: 1 })).rejects.toMatchObject({ status: 404 });
    const res = await api("/store/items", { method: "PUT", key: t.adminKey, body: { namespace: ["docset", "d"], key: "k", value: {} } });
    expect(res.status).toBe(404);
    const error = await errorOf(res);
    expect(error.code).toBe("BEM-002");
    expect(error.message).toContain('apiUrl: "<origin>/v1/langgraph"');
    expect(error.message).toContain('apiUrl: "<origin>/v1/agent-protocol"');
    // With the right apiUrl it works.
    await clientAt(`${BASE_URL}/v1/langgraph`, t.adminKey).store.putItem(["docset", "d"], "k", { v: 1 });
  });

  it("threads.get and threads.search under the store's base path: 404 pointing at the server API, not 405", async () => {
    const t = await createTenant();
    const client = clientAt(`${BASE_URL}/v1/langgraph`, t.adminKey);
    await expect(client.threads.get("t-1")).rejects.toMatchObject({ status: 404 });
    await expect(client.threads.search()).rejects.toMatchObject({ status: 404 });
    for (const [method, path] of [
      ["GET", "/v1/langgraph/threads/t-1"],
      ["POST", "/v1/langgraph/threads/search"],
      ["POST", "/v1/langgraph/threads"],
      ["POST", "/v1/langgraph/assistants/search"],
    ] as const) {
      const res = await api(path, { method, key: t.adminKey, ...(method === "POST" ? { body: {} } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      const error = await errorOf(res);
      expect(error.code).toBe("BEM-002");
      expect(error.message).toContain("POST /v1/langgraph/threads/{thread_id}/get");
      expect(error.message).toContain("GET /v1/threads/{thread_id}");
      expect(error.message).toContain('apiUrl: "<origin>/v1/agent-protocol"');
    }
    // A real route with another method is still 405, and the key is still checked first.
    expect((await api("/v1/langgraph/threads/t-1/batch", { method: "GET", key: t.adminKey })).status).toBe(405);
    expect((await api("/v1/langgraph/threads/search", { method: "POST", body: {} })).status).toBe(401);
  });
});
