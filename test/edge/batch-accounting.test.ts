import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { checkpointPut } from "../support/checkpoint-put";
import { countingLimiter } from "../support/counting-limiter";
import { authHeaders, createTenant, type TestTenant } from "../support/tenants";

/**
 * A batch-shaped request (a LangGraph store or checkpointer batch, thread state ops, conversation
 * items) counted once against the key's rate limit, whatever it carried: a member at 3,000 LangGraph
 * calls a minute ran 300,000 store ops. Now each started group of 10 ops counts one request (the
 * access gate's count is the first), checked before any op runs: past the allowance the whole
 * request is 429 BEM-024 and nothing of it is stored. Each route's documented cap on ops is a 400.
 */

async function call(key: string, method: string, path: string, body: unknown, vars: Partial<Env>): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://x${path}`, { method, headers: authHeaders(key), body: JSON.stringify(body) }), { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

const uid = () => crypto.randomUUID().slice(0, 8);
type Route = {
  name: string;
  cap: number;
  /** The 400's code one op over the cap. */
  overCode: string;
  binding: "RATE_LIMIT_LANGGRAPH" | "RATE_LIMIT_ADMIN";
  request: (t: TestTenant, n: number) => Promise<[string, string, unknown]>;
  /** What the route stored, to see that a refused batch stored nothing. */
  stored: (t: TestTenant) => Promise<number>;
};

const count = async (sql: string, ...args: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...args)
      .first<{ n: number }>()
  )?.n ?? -1;
const threadOf = new Map<string, string>();
const threadFor = (t: TestTenant, name: string) => {
  const k = `${t.tenant}/${name}`;
  if (!threadOf.has(k)) threadOf.set(k, `ba-${uid()}`);
  return threadOf.get(k)!;
};
const conversations = new Map<string, string>();
async function conversationFor(t: TestTenant): Promise<string> {
  if (!conversations.has(t.tenant)) {
    const r = await call(t.adminKey, "POST", "/v1/conversations", {}, {});
    conversations.set(t.tenant, ((await r.json()) as { id: string }).id);
  }
  return conversations.get(t.tenant)!;
}
const historyLength = async (t: TestTenant, thread: string) => {
  const r = await call(t.adminKey, "GET", `/v1/threads/${thread}/history?limit=100`, undefined, {});
  return r.status === 404 ? 0 : ((await r.json()) as { checkpoints: unknown[] }).checkpoints.length;
};

const ROUTES: Route[] = [
  {
    name: "POST /v1/langgraph/store/batch",
    cap: 100,
    overCode: "BEM-011",
    binding: "RATE_LIMIT_LANGGRAPH",
    request: async (_t, n) => [
      "POST",
      "/v1/langgraph/store/batch",
      { ops: Array.from({ length: n }, (_, i) => ({ op: "put", namespace: ["organization", "acme", "ba"], key: `k${i}-${uid()}`, value: { i } })) },
    ],
    stored: (t) => count("SELECT COUNT(*) AS n FROM store_items WHERE tenant_id = ?", t.tenant),
  },
  {
    name: "POST /v1/langgraph/threads/:id/batch",
    cap: 256,
    overCode: "BEM-011",
    binding: "RATE_LIMIT_LANGGRAPH",
    request: async (t, n) => ["POST", `/v1/langgraph/threads/${threadFor(t, "lg")}/batch`, { ops: Array.from({ length: n }, checkpointPut) }],
    stored: async (t) => {
      const r = await call(t.adminKey, "POST", `/v1/langgraph/threads/${threadFor(t, "lg")}/list`, {}, {});
      return r.status === 200 ? ((await r.json()) as { tuples: unknown[] }).tuples.length : 0;
    },
  },
  {
    name: "POST /v1/threads/:id/state",
    cap: 1000,
    overCode: "BEM-035",
    binding: "RATE_LIMIT_ADMIN",
    request: async (t, n) => [
      "POST",
      `/v1/threads/${threadFor(t, "state")}/state`,
      // Ops other than append (an append's messages count per 1,000: test/edge/import-accounting.test.ts).
      { ops: Array.from({ length: n }, (_, i) => ({ op: "set", channel: `c${i % 50}`, value: i })) },
    ],
    stored: (t) => historyLength(t, threadFor(t, "state")),
  },
  {
    name: "POST /v1/conversations/:id/items",
    cap: 1000,
    overCode: "BEM-011",
    binding: "RATE_LIMIT_ADMIN",
    request: async (t, n) => [
      "POST",
      `/v1/conversations/${await conversationFor(t)}/items`,
      { items: Array.from({ length: n }, (_, i) => ({ type: "message", role: "user", content: `item ${i}` })) },
    ],
    stored: async (t) => historyLength(t, await conversationFor(t)),
  },
  {
    name: "POST /v1/conversations",
    cap: 1000,
    overCode: "BEM-011",
    binding: "RATE_LIMIT_ADMIN",
    request: async (_t, n) => [
      "POST",
      "/v1/conversations",
      { items: Array.from({ length: n }, (_, i) => ({ type: "message", role: "user", content: `item ${i}` })) },
    ],
    stored: (t) => count("SELECT COUNT(*) AS n FROM conversations WHERE tenant_id = ?", t.tenant),
  },
];

describe("batch-shaped requests count one request per started group of 10 ops", () => {
  for (const route of ROUTES) {
    it(`${route.name}: 1, 10, 11 and cap ops count 1, 1, 2 and cap/10; one over the cap is 400; past the allowance 429 and nothing stored`, async () => {
      const t = await createTenant();
      const keyId = `key:${t.adminKeyId}`;
      for (const [n, counted] of [
        [1, 1],
        [10, 1],
        [11, 2],
        [route.cap, Math.ceil(route.cap / 10)],
      ] as const) {
        const { limiter, counts } = countingLimiter();
        const [method, path, body] = await route.request(t, n);
        const res = await call(t.adminKey, method, path, body, { [route.binding]: limiter });
        expect(res.status, `${n} ops: ${await res.clone().text()}`).toBeLessThan(300);
        expect(counts.get(keyId), `${n} ops`).toBe(counted);
      }
      const [method, path, body] = await route.request(t, route.cap + 1);
      const over = await call(t.adminKey, method, path, body, {});
      expect(over.status).toBe(400);
      expect(((await over.json()) as { error: { code: string } }).error.code).toBe(route.overCode);

      const before = await route.stored(t);
      const { limiter } = countingLimiter(3);
      const [m2, p2, b2] = await route.request(t, 40);
      const refused = await call(t.adminKey, m2, p2, b2, { [route.binding]: limiter });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("BEM-024");
      expect(refused.headers.get("retry-after")).toBe("60");
      expect(await route.stored(t)).toBe(before);
    });
  }
});

/**
 * A LangGraph checkpointer batch counted its ops, whatever each carried: one writes op (or a put's
 * blobs) of 100,000 rows counted as one request. Now an op weighs its items (a put's blobs, a writes
 * op's writes; at least 1), one request per started 10.
 */
describe("a LangGraph checkpointer batch counts its items", () => {
  const b64 = (o: unknown) => btoa(JSON.stringify(o));
  const value = { t: "json", b: b64(1) };
  const put = (blobs: number) => ({
    ...checkpointPut(),
    blobs: Array.from({ length: blobs }, (_, i) => ({ channel: `c${i}`, version: 1, value })),
  });
  const writes = (checkpointId: string, n: number, task = "t") => ({
    op: "writes",
    ns: "",
    checkpoint_id: checkpointId,
    task_id: task,
    task_path: "",
    writes: Array.from({ length: n }, (_, i) => ({ channel: `c${i}`, idx: i, value })),
  });
  const stored = async (t: TestTenant, thread: string) => {
    const r = await call(t.adminKey, "POST", `/v1/langgraph/threads/${thread}/get`, {}, {});
    return ((await r.json()) as { tuple: { writes: unknown[] } | null }).tuple?.writes.length ?? 0;
  };

  it("the charges go to the limiter 32 at a time, not one round trip each; a refused group stops the rest", async () => {
    // 1,600 writes are 160 charges: they had gone one after another (a batch at its item cap, ~2,500 round trips).
    const t = await createTenant();
    const thread = `acct-${uid()}`;
    const p = put(1);
    expect((await call(t.adminKey, "POST", `/v1/langgraph/threads/${thread}/batch`, { ops: [p] }, {})).status).toBe(200);
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const slow = (allow: number) =>
      ({
        limit: async () => {
          calls++;
          const ok = calls <= allow;
          inFlight++;
          most = Math.max(most, inFlight);
          await scheduler.wait(1);
          inFlight--;
          return { success: ok };
        },
      }) as unknown as RateLimit;
    const res = await call(
      t.adminKey,
      "POST",
      `/v1/langgraph/threads/${thread}/batch`,
      { ops: [writes(p.id, 1600, "wide")] },
      { RATE_LIMIT_LANGGRAPH: slow(Infinity) },
    );
    expect(res.status).toBe(200);
    expect([calls, most]).toEqual([160, 32]);
    calls = 0;
    const refused = await call(
      t.adminKey,
      "POST",
      `/v1/langgraph/threads/${thread}/batch`,
      { ops: [writes(p.id, 1600, "late")] },
      { RATE_LIMIT_LANGGRAPH: slow(40) },
    );
    expect(refused.status).toBe(429);
    // The route's own charge, then groups of 32 until one holds a refusal: 1 + 32 + 32.
    expect(calls).toBe(65);
  });

  it("a writes op of 100 writes counts 10, a put of 25 blobs 3, 1,600 writes 160; past the allowance 429, nothing stored", async () => {
    const t = await createTenant();
    const keyId = `key:${t.adminKeyId}`;
    const thread = `ba-${uid()}`;
    const p = put(25);
    for (const [ops, counted] of [
      [[p], 3],
      [[writes(p.id, 100)], 10],
      [[writes(p.id, 5, "a"), writes(p.id, 5, "b"), writes(p.id, 1, "c")], 2],
    ] as const) {
      const { limiter, counts } = countingLimiter();
      const res = await call(t.adminKey, "POST", `/v1/langgraph/threads/${thread}/batch`, { ops }, { RATE_LIMIT_LANGGRAPH: limiter });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(counts.get(keyId), JSON.stringify(ops.map((o) => o.op))).toBe(counted);
    }
    expect(await stored(t, thread)).toBe(100 + 11);

    // The body's JSON guard (MAX_LANGGRAPH_JSON_ITEMS: 100,000 array items and keys) is what bounds one op's items: ~16,600 writes.
    const over = await call(t.adminKey, "POST", `/v1/langgraph/threads/${thread}/batch`, { ops: [writes(p.id, 16_700, "big")] }, {});
    expect(over.status).toBe(400);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe("BEM-014");
    const { limiter: wide, counts: wideCounts } = countingLimiter();
    expect(
      (await call(t.adminKey, "POST", `/v1/langgraph/threads/${thread}/batch`, { ops: [writes(p.id, 1600, "wide")] }, { RATE_LIMIT_LANGGRAPH: wide })).status,
    ).toBe(200);
    expect(wideCounts.get(keyId)).toBe(160);

    const { limiter } = countingLimiter(3);
    const refused = await call(
      t.adminKey,
      "POST",
      `/v1/langgraph/threads/${thread}/batch`,
      { ops: [writes(p.id, 40, "late")] },
      { RATE_LIMIT_LANGGRAPH: limiter },
    );
    expect(refused.status).toBe(429);
    expect(await stored(t, thread)).toBe(100 + 11 + 1600);
  });
});
