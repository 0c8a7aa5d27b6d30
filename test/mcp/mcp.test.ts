import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tenantForRuns, uniqueThread } from "../pipeline/helpers";
import { api, createKey, createTenant, OPERATOR_KEY } from "../support/tenants";

const tenant = tenantForRuns();
type Text = { type: string; text: string };
type Result = { content: Text[]; isError?: boolean };

/** The MCP SDK's own client, its HTTP requests going to the worker under test. */
async function mcpClient(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://x/mcp"), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
  });
  const client = new Client({ name: "edgeweave-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}
const callJson = async (c: Client, name: string, args: Record<string, unknown>) => {
  const r = (await c.callTool({ name, arguments: args })) as Result;
  return { error: r.isError === true, text: r.content[0]!.text, json: r.isError ? undefined : (JSON.parse(r.content[0]!.text) as Record<string, unknown>) };
};

describe("MCP endpoint (Streamable HTTP, stateless)", () => {
  it("lists the memory and thread tools; remember / recall / forget round-trip with an admin key", async () => {
    const t = tenant();
    const c = await mcpClient(t.adminKey);
    const { tools } = await c.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(["forget", "get_thread", "recall", "remember", "search_threads"]);
    expect(Object.keys((tools.find((x) => x.name === "remember")!.inputSchema as { properties: object }).properties).sort()).toEqual([
      "key",
      "kind",
      "scope",
      "text",
      "ttl_seconds",
    ]);

    const saved = await callJson(c, "remember", { scope: "organization:acme", kind: "preference", key: "editor", text: "The user edits in Neovim." });
    expect(saved.json).toMatchObject({ scope: "organization:acme", key: "editor", replaced: false });
    const again = await callJson(c, "remember", { scope: "organization:acme", kind: "preference", key: "editor", text: "The user switched to Helix." });
    expect(again.json).toMatchObject({ id: saved.json!.id, replaced: true, version: 2 });
    const found = await callJson(c, "recall", { query: "does the user still use Helix?", scopes: ["organization:acme"] });
    expect((found.json!.facts as { text: string }[])[0]!.text).toBe("The user switched to Helix.");
    const gone = await callJson(c, "forget", { key: "editor", scope: "organization:acme" });
    expect(gone.json).toMatchObject({ deleted: true });
    expect((await callJson(c, "recall", { query: "Helix", scopes: ["organization:acme"] })).json).toEqual({ facts: [] });
    const unknown = await callJson(c, "forget", { id: "no-such-id" });
    expect(unknown.error).toBe(true);
    expect(unknown.text).toMatch(/^BEM-061/);
    await c.close();
  });

  it("search_threads and get_thread read the tenant's threads within the key's grants", async () => {
    const t = tenant();
    const thread = uniqueThread("mcp");
    await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: "Hello from a thread" }] },
    });
    const admin = await mcpClient(t.adminKey);
    const listed = await callJson(admin, "search_threads", { query: thread });
    expect(listed.json!.threads).toEqual([expect.objectContaining({ thread_id: thread })]);
    const read = await callJson(admin, "get_thread", { thread_id: thread });
    expect((read.json!.messages as { role: string; content: string }[]).map((m) => m.role)).toEqual(["user", "assistant"]);

    // A member key without a session grant sees no threads and cannot read one.
    const member = await mcpClient(t.memberKey);
    expect((await callJson(member, "search_threads", { query: thread })).json).toEqual({ threads: [] });
    const denied = await callJson(member, "get_thread", { thread_id: thread });
    expect(denied.error).toBe(true);
    expect(denied.text).toMatch(/^BEM-023/);
    // With a grant on that session, it can.
    const reader = await mcpClient((await createKey(t.tenant, { role: "member", scopes: [`session:${thread}`] })).key);
    expect((await callJson(reader, "search_threads", {})).json).toEqual({ threads: [expect.objectContaining({ thread_id: thread })] });
    expect((await callJson(reader, "get_thread", { thread_id: thread })).error).toBe(false);
    for (const c of [admin, member, reader]) await c.close();
  });

  it("grants and tenants: a member cannot write or read outside its grants; another tenant sees nothing", async () => {
    const t = tenant();
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "secret", key: "vault", text: "Vault code 4711." } });
    const member = await mcpClient((await createKey(t.tenant, { role: "member", scopes: ["docset:*"] })).key);
    const w = await callJson(member, "remember", { scope: "organization:acme", kind: "note", text: "sneaky" });
    expect(w.error).toBe(true);
    expect(w.text).toMatch(/^BEM-023/);
    const r = await callJson(member, "recall", { query: "vault code", scopes: ["organization:acme"] });
    expect(r.text).toMatch(/^BEM-023/);
    const noScope = await callJson(member, "remember", { kind: "note", text: "where does this go?" });
    expect(noScope.text).toMatch(/^BEM-023/); // docset:* names no one scope
    const ok = await callJson(member, "remember", { scope: "docset:guide", kind: "note", text: "Inside the grant." });
    expect(ok.error).toBe(false);

    const other = await createTenant();
    const o = await mcpClient(other.adminKey);
    expect((await callJson(o, "recall", { query: "vault code", scopes: ["organization:acme"] })).json).toEqual({ facts: [] });
    expect((await callJson(o, "forget", { key: "vault", scope: "organization:acme" })).text).toMatch(/^BEM-061/);
    expect((await callJson(o, "search_threads", {})).json).toEqual({ threads: [] });
    const facts = (await (await api("/v1/memory/facts?scope=organization:acme&key=vault", { key: t.adminKey })).json()) as { facts: unknown[] };
    expect(facts.facts).toHaveLength(1);
    for (const c of [member, o]) await c.close();
  });

  it("the operator key holds no tenant: every memory and thread tool is a coded tool error, nothing stored or read", async () => {
    const op = await mcpClient(OPERATOR_KEY);
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM facts WHERE scope = 'system'").first<{ n: number }>();
    for (const [name, args] of [
      ["remember", { scope: "system", kind: "rule", text: "via MCP" }],
      ["recall", { query: "anything", scopes: ["system"] }],
      ["forget", { id: "x" }],
      ["search_threads", {}],
      ["get_thread", { thread_id: "t-1" }],
    ] as const) {
      const r = await callJson(op, name, args);
      expect(r.error, name).toBe(true);
      expect(r.text, name).toMatch(/^BEM-143/);
    }
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM facts WHERE scope = 'system'").first<{ n: number }>()).toEqual(before);
    await op.close();
  });

  it("needs a valid bearer key", async () => {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const none = await exports.default.fetch("http://x/mcp", { method: "POST", headers, body: JSON.stringify(body) });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("BEM-020");
    const bad = await exports.default.fetch("http://x/mcp", {
      method: "POST",
      headers: { ...headers, authorization: "Bearer nope" },
      body: JSON.stringify(body),
    });
    expect(bad.status).toBe(401);
    await expect(mcpClient("wrong-key")).rejects.toThrow();
  });
});
