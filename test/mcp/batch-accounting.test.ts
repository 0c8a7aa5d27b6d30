import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countOf } from "../../src/auth/quotas";
import { app } from "../../src/http/app";
import { countingLimiter } from "../support/counting-limiter";
import { authHeaders, createKey, createTenant } from "../support/tenants";

/**
 * Issue 25, finding 4: a JSON-RPC batch of up to 100 tool calls counted as one request against
 * the key's rate limit (a member limited to 120 a minute stored 300 facts in 3 requests), and its
 * calls passed the fact-quota check together (quota 20 ended at 115 facts). Now each tool call
 * counts (a request with none counts once), a batch over the allowance runs nothing, and the calls
 * of one batch run one after another, so the quota holds within a batch.
 */

type Rpc = { jsonrpc: "2.0"; id?: number; method: string; params?: unknown };

async function post(key: string, body: unknown, vars: Partial<Env>): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request("http://x/mcp", {
      method: "POST",
      headers: authHeaders(key, { accept: "application/json, text/event-stream" }),
      body: JSON.stringify(body),
    }),
    { ...env, ...vars },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const isToolCall = (m: Rpc) => m.method === "tools/call" && m.id !== undefined;

/** One message of a batch: tool calls of every kind, and messages that are not tool calls. */
const message = (word: string) =>
  fc
    .oneof(
      fc.record({ kind: fc.constant("remember"), keyed: fc.boolean(), n: fc.nat(5) }),
      fc.record({ kind: fc.constant("recall") }),
      fc.record({ kind: fc.constant("search_threads") }),
      fc.record({ kind: fc.constant("unknown_tool") }),
      fc.record({ kind: fc.constant("bad_arguments") }),
      fc.record({ kind: fc.constant("tools/list") }),
      fc.record({ kind: fc.constant("ping") }),
      fc.record({ kind: fc.constant("notification") }),
    )
    .map((m): Omit<Rpc, "id"> & { notify?: true } => {
      const call = (name: string, args: unknown) => ({ jsonrpc: "2.0" as const, method: "tools/call", params: { name, arguments: args } });
      switch (m.kind) {
        case "remember":
          return call("remember", {
            scope: "organization:acme",
            kind: "note",
            text: `${word} fact ${m.n}`,
            ...("keyed" in m && m.keyed ? { key: `k-${m.n}` } : {}),
          });
        case "recall":
          return call("recall", { query: word });
        case "search_threads":
          return call("search_threads", {});
        case "unknown_tool":
          return call("no_such_tool", {});
        case "bad_arguments":
          return call("remember", { kind: 7 });
        case "notification":
          return { jsonrpc: "2.0", method: "notifications/initialized", notify: true };
        default:
          return { jsonrpc: "2.0", method: m.kind };
      }
    });

describe("MCP batches: accounting per tool call", () => {
  it("property: rate-limit checks equal the tool calls (at least one per request), and the fact quota is never exceeded", async () => {
    const t = await createTenant();
    const member = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(message("w"), { minLength: 1, maxLength: 40 }), fc.nat(12), fc.boolean(), async (shape, headroom, asMember) => {
        round++;
        const word = `batch${round}x${crypto.randomUUID().slice(0, 6)}`;
        const batch: Rpc[] = shape.map(({ notify, ...m }, i) => {
          const withWord = JSON.parse(JSON.stringify(m).replaceAll('"w fact', `"${word} fact`).replaceAll('"query":"w"', `"query":"${word}"`)) as Rpc;
          return notify ? withWord : { ...withWord, id: i + 1 };
        });
        const held = await countOf(env.DB, t.tenant, "facts");
        const quota = held + headroom;
        const { limiter, counts } = countingLimiter();
        const key = asMember ? member : { key: t.adminKey, id: t.adminKeyId };
        const res = await post(key.key, batch, {
          MAX_FACTS_PER_TENANT: String(quota),
          RATE_LIMIT_ADMIN: limiter,
          RATE_LIMIT_MEMBER: limiter,
        });
        const calls = batch.filter(isToolCall).length;
        expect(res.status).toBe(batch.some((m) => m.id !== undefined) ? 200 : 202);
        await res.body?.cancel();
        expect(counts.get(`key:${key.id}`)).toBe(Math.max(1, calls));
        expect(await countOf(env.DB, t.tenant, "facts")).toBeLessThanOrEqual(quota);
      }),
      { numRuns: 40 },
    );
  });

  it("the issue's numbers: 100 remembers in one batch at quota 20 store 20; the other 80 are BEM-018 tool errors", async () => {
    const t = await createTenant();
    const batch = Array.from({ length: 100 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i + 1,
      method: "tools/call",
      params: { name: "remember", arguments: { scope: "organization:acme", kind: "note", text: `Fact number ${i}.` } },
    }));
    const { limiter, counts } = countingLimiter();
    const res = await post(t.adminKey, batch, { MAX_FACTS_PER_TENANT: "20", RATE_LIMIT_ADMIN: limiter });
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { result: { isError?: boolean; content: { text: string }[] } }[];
    expect(answers.filter((a) => a.result.isError !== true)).toHaveLength(20);
    expect(answers.filter((a) => a.result.content[0]!.text.startsWith("BEM-018"))).toHaveLength(80);
    expect(await countOf(env.DB, t.tenant, "facts")).toBe(20);
    expect(counts.get(`key:${t.adminKeyId}`)).toBe(100);
  });

  it("a batch with more tool calls than the key has left is 429 BEM-024 and runs none of them", async () => {
    const t = await createTenant();
    const member = await createKey(t.tenant, { role: "member", scopes: ["organization:acme"] });
    const batch = Array.from({ length: 30 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i + 1,
      method: "tools/call",
      params: { name: "remember", arguments: { kind: "note", text: `Over the limit ${i}.` } },
    }));
    const { limiter } = countingLimiter(20);
    const res = await post(member.key, batch, { RATE_LIMIT_MEMBER: limiter });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-024");
    expect(await countOf(env.DB, t.tenant, "facts")).toBe(0);
  });
});
