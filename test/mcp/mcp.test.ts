import { env, exports } from "cloudflare:workers";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { describe, expect, it } from "vitest";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { callJson, mcpClient } from "../support/mcp-client";
import { api, createKey, createTenant, OPERATOR_KEY } from "../support/tenants";

const tenant = tenantForRuns();

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
    expect((await callJson(member, "search_threads", { query: thread })).json).toEqual({ threads: [], next_before: null });
    const denied = await callJson(member, "get_thread", { thread_id: thread });
    expect(denied.error).toBe(true);
    expect(denied.text).toMatch(/^BEM-025/);
    // With a grant on that session, it can.
    const reader = await mcpClient((await createKey(t.tenant, { role: "member", scopes: [`session:${thread}`] })).key);
    expect((await callJson(reader, "search_threads", {})).json).toEqual({ threads: [expect.objectContaining({ thread_id: thread })], next_before: null });
    expect((await callJson(reader, "get_thread", { thread_id: thread })).error).toBe(false);
    for (const c of [admin, member, reader]) await c.close();
  });

  it("search_threads applies the grants and the query before its limit: an old thread behind 500+ newer ones is found", async () => {
    const t = await createTenant();
    const old = uniqueThread("old");
    const append = { ops: [{ op: "append", messages: [{ role: "user", content: "An old question" }] }] };
    expect((await api(`/v1/threads/${old}/state`, { key: t.adminKey, body: append })).status).toBe(200);
    // 505 newer threads of the same tenant, none the member may reach: only the D1 index is listed, so rows suffice.
    const base = Date.now() + 60_000;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 505)
       INSERT INTO threads (tenant_id, thread_id, created_at, updated_at) SELECT ?1, 'new-' || i, ?2 + i, ?2 + i FROM n`,
    )
      .bind(t.tenant, base)
      .run();

    const member = await mcpClient((await createKey(t.tenant, { role: "member", scopes: ["session:old-*"] })).key);
    expect((await callJson(member, "search_threads", {})).json).toEqual({ threads: [expect.objectContaining({ thread_id: old })], next_before: null });
    // The query matches ids case-insensitively, in the same query, so it too reaches past the newer rows.
    const admin = await mcpClient(t.adminKey);
    expect((await callJson(admin, "search_threads", { query: old.toUpperCase() })).json).toEqual({
      threads: [expect.objectContaining({ thread_id: old })],
      next_before: null,
    });
    // Paging: the admin's pages of 50 walk every thread, newest first, the old one last.
    const seen: string[] = [];
    let before: string | null = null;
    do {
      const page = (await callJson(admin, "search_threads", { limit: 50, ...(before ? { before } : {}) })).json as {
        threads: { thread_id: string }[];
        next_before: string | null;
      };
      seen.push(...page.threads.map((x) => x.thread_id));
      before = page.next_before;
    } while (before);
    expect(seen).toHaveLength(506);
    expect(seen.at(-1)).toBe(old);
    for (const c of [member, admin]) await c.close();
  });

  it("get_thread: a thread outside the grants is BEM-025 whether or not it exists; a missing one within them is BEM-036", async () => {
    const t = tenant();
    const thread = uniqueThread("mcp-get");
    const append = { ops: [{ op: "append", messages: [{ role: "user", content: "Kept" }] }] };
    expect((await api(`/v1/threads/${thread}/state`, { key: t.adminKey, body: append })).status).toBe(200);
    const admin = await mcpClient(t.adminKey);
    const missing = await callJson(admin, "get_thread", { thread_id: uniqueThread("mcp-none") });
    expect(missing.error).toBe(true);
    expect(missing.text).toMatch(/^BEM-036/);
    expect((await callJson(admin, "get_thread", { thread_id: thread, limit: 1 })).json).toMatchObject({ messages: [{ role: "user", content: "Kept" }] });

    const member = await mcpClient((await createKey(t.tenant, { role: "member", scopes: ["session:mcp-mine-*"] })).key);
    for (const id of [thread, uniqueThread("mcp-none")]) {
      const r = await callJson(member, "get_thread", { thread_id: id });
      expect(r.text, id).toMatch(/^BEM-025/);
    }
    expect((await callJson(member, "get_thread", { thread_id: uniqueThread("mcp-mine") })).text).toMatch(/^BEM-036/);
    for (const c of [admin, member]) await c.close();
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
    expect((await callJson(o, "search_threads", {})).json).toEqual({ threads: [], next_before: null });
    const facts = (await (await api("/v1/memory/facts?scope=organization:acme&key=vault", { key: t.adminKey })).json()) as { facts: unknown[] };
    expect(facts.facts).toHaveLength(1);
    for (const c of [member, o]) await c.close();
  });

  it("recall's score is each match's relevance next to the answer's best: 1 for the best, lower for weaker matches (it read 0.000001 for every fact)", async () => {
    const t = await createTenant();
    const word = `quillon${crypto.randomUUID().slice(0, 6)}`;
    const texts = [
      `${word} ${word} ${word}.`,
      `The ${word} note, with a few more words.`,
      `A long note that names ${word} once, among many other words about unrelated places, people, times and things.`,
    ];
    for (const text of [...texts].reverse())
      expect((await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "note", text } })).status).toBe(201);
    const c = await mcpClient(t.adminKey);
    // With scopes (the run's tool) and without (every scope the key may read): two queries, one contract.
    for (const args of [{ query: word, scopes: ["organization:acme"] }, { query: word }]) {
      const facts = (await callJson(c, "recall", args)).json!.facts as { text: string; score: number }[];
      expect(facts.map((f) => f.text)).toEqual(texts);
      const [best, mid, weak] = facts.map((f) => f.score);
      expect(best).toBe(1);
      expect(mid).toBeLessThan(best!);
      expect(weak).toBeLessThan(mid!);
      expect(weak).toBeGreaterThan(0);
    }
    await c.close();
  });

  it("recall without scopes searches every scope the key may read; remember without a scope says what to pass (issue 24, item 3)", async () => {
    const t = await createTenant();
    const word = `zorblat${crypto.randomUUID().slice(0, 6)}`;
    const put = async (key: string, scope: string, text: string) =>
      expect((await api("/v1/memory/facts", { key, body: { scope, kind: "note", text } })).status).toBe(201);
    await put(t.adminKey, "organization:acme", `The ${word} vault code is 4711.`);
    await put(t.adminKey, "docset:guide", `The ${word} guide lives on page 9.`);
    await put(t.adminKey, `session:mcp-${word}`, `The ${word} session note.`);
    await put(OPERATOR_KEY, "system", `The ${word} house rule: be brief.`);
    const other = await createTenant();
    await put(other.adminKey, "organization:acme", `Another tenant's ${word} secret.`);

    const scopesFound = async (c: Client) =>
      ((await callJson(c, "recall", { query: word, limit: 20 })).json!.facts as { scope: string }[]).map((f) => f.scope).sort();
    // An admin reads every scope of its tenant (and system); before, this was {"facts":[]} apart from system.
    const admin = await mcpClient(t.adminKey);
    expect(await scopesFound(admin)).toEqual(["docset:guide", "organization:acme", `session:mcp-${word}`, "system"]);
    // A member reads what its grants match (patterns included), and system.
    const member = await mcpClient((await createKey(t.tenant, { role: "member", scopes: ["docset:*", "session:mcp-*"] })).key);
    expect(await scopesFound(member)).toEqual(["docset:guide", `session:mcp-${word}`, "system"]);
    const exact = await mcpClient((await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] })).key);
    expect(await scopesFound(exact)).toEqual(["organization:acme", "system"]);
    // The tool's description says so.
    const recall = (await admin.listTools()).tools.find((x) => x.name === "recall")!;
    expect(recall.description).toMatch(/every scope this key may read/);

    // remember without a scope, for a key with no one scope to default to: the error names what to pass.
    const noScope = await callJson(admin, "remember", { kind: "note", text: "where does this go?" });
    expect(noScope.error).toBe(true);
    expect(noScope.text).toMatch(/^BEM-023/);
    expect(noScope.text).toMatch(/pass `scope`/);
    expect(noScope.text).not.toMatch(/this run/);
    const wild = await callJson(member, "remember", { kind: "note", text: "and this?" });
    expect(wild.text).toMatch(/pass `scope`.*docset:\*/);
    // With one exact grant, that scope is the default, as the description says.
    expect((await callJson(exact, "remember", { kind: "note", text: `Defaulted ${word}.` })).json).toMatchObject({ scope: "organization:acme" });
    const remember = (await admin.listTools()).tools.find((x) => x.name === "remember")!;
    expect(remember.description).toMatch(/scope/);
    for (const c of [admin, member, exact]) await c.close();
  });

  it("recall without scopes works for a member of 64 exact grants (its OR of grants nested past D1's expression depth of 100: an uncoded Internal error)", async () => {
    const t = await createTenant();
    const word = `quillon${crypto.randomUUID().slice(0, 6)}`;
    for (const i of [0, 63]) {
      const res = await api("/v1/memory/facts", { key: t.adminKey, body: { scope: `organization:g${i}`, kind: "note", text: `The ${word} fact ${i}.` } });
      expect(res.status).toBe(201);
    }
    const scopes = Array.from({ length: 64 }, (_, i) => `organization:g${i}`);
    const member = await mcpClient((await createKey(t.tenant, { role: "member", scopes })).key);
    const found = await callJson(member, "recall", { query: word, limit: 20 });
    expect(found.error).toBe(false);
    expect((found.json!.facts as { scope: string }[]).map((f) => f.scope).sort()).toEqual(["organization:g0", "organization:g63"]);
    await member.close();
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

  it("GET and DELETE /mcp are 405 BEM-003 with Allow: POST (a stateless server offers no SSE stream and no session to end)", async () => {
    const t = tenant();
    for (const method of ["GET", "DELETE"]) {
      const res = await exports.default.fetch("http://x/mcp", {
        method,
        headers: { authorization: `Bearer ${t.adminKey}`, accept: "text/event-stream, application/json" },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("POST");
      expect(((await res.json()) as { error: { code: string } }).error.code, method).toBe("BEM-003");
    }
    // The key is checked first, as on /v1.
    const anonymous = await exports.default.fetch("http://x/mcp", { method: "GET" });
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
    // The SDK's client still works: it treats 405 on GET as "no standalone stream".
    const c = await mcpClient(t.adminKey);
    expect((await c.listTools()).tools.length).toBeGreaterThan(0);
    await c.close();
  });

  it("a bad tool call is a coded tool error: an unknown tool, a wrong type, an argument the tool does not take (a typo listed every thread)", async () => {
    const t = tenant();
    const { key } = await createKey(t.tenant, { role: "member", scopes: ["organization:acme", "session:mcp-bad-*"] });
    const c = await mcpClient(key);
    const { tools } = await c.listTools();
    for (const tool of tools) expect(tool.inputSchema, tool.name).toMatchObject({ additionalProperties: false });
    const calls: [string, Record<string, unknown>, RegExp][] = [
      ["no_such_tool", {}, /^BEM-011: Unknown tool 'no_such_tool'/],
      ["recall", { query: 7 }, /^BEM-011: Invalid arguments for 'recall': query/],
      ["get_thread", { thread_id: "mcp-bad-1", limit: 0 }, /^BEM-011: Invalid arguments for 'get_thread': limit/],
      [
        "search_threads",
        { qurey: "mcp-bad" },
        /^BEM-011: Invalid arguments for 'search_threads': 'qurey' is not an argument it takes \(query, limit, before\)$/,
      ],
      [
        "search_threads",
        { qurey: "mcp-bad", limt: 5 },
        /^BEM-011: Invalid arguments for 'search_threads': 'qurey', 'limt' are not arguments it takes \(query, limit, before\)$/,
      ],
      ["remember", { scope: "organization:acme", kind: "preference", text: "x", ttl: 60 }, /^BEM-011: .*'ttl'/],
    ];
    for (const [name, args, text] of calls) {
      const r = await callJson(c, name, args);
      expect(r.error, name).toBe(true);
      expect(r.text, name).toMatch(text);
    }
    expect((await callJson(c, "recall", { query: "x", scopes: ["organization:acme"] })).json).toEqual({ facts: [] }); // nothing was stored
    await c.close();
  });

  it("a tools/call whose params do not parse is JSON-RPC's -32602 Invalid params, not -32603 Internal error", async () => {
    const t = tenant();
    for (const params of [{ name: "recall", arguments: [1, 2] }, { arguments: {} }, { name: 7 }]) {
      const res = await exports.default.fetch(
        new Request("http://x/mcp", {
          method: "POST",
          headers: { authorization: `Bearer ${t.adminKey}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params }),
        }),
      );
      expect(res.status).toBe(200);
      const body = (await res.json()) as { error?: { code: number; message: string } };
      expect(body.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(body.error?.message).toMatch(/Invalid tools\/call request/);
    }
  });

  it("forget outside the grants answers alike whether or not the fact is there (a key's existence in another scope was told apart)", async () => {
    const t = tenant();
    const a = await mcpClient(t.adminKey);
    const saved = await callJson(a, "remember", { scope: "organization:rival", kind: "preference", key: "plan", text: "secret plan" });
    const { key } = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] });
    const m = await mcpClient(key);
    const present = await callJson(m, "forget", { key: "plan", scope: "organization:rival" });
    const absent = await callJson(m, "forget", { key: "no-such-key", scope: "organization:rival" });
    expect(present.error && absent.error).toBe(true);
    expect(present.text).toMatch(/^BEM-023/);
    expect(absent.text.replace("no-such-key", "plan")).toBe(present.text);
    // By id: a fact outside the grants reads as one that does not exist.
    const byId = await callJson(m, "forget", { id: saved.json!.id });
    const noId = await callJson(m, "forget", { id: "01M8SPDMB9000000XXXX" });
    expect(byId.text.replace(String(saved.json!.id), "ID")).toBe(noId.text.replace("01M8SPDMB9000000XXXX", "ID"));
    expect((await callJson(a, "recall", { query: "secret plan", scopes: ["organization:rival"] })).json!.facts).toHaveLength(1);
    await Promise.all([a.close(), m.close()]);
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
