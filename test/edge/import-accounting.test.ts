import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { countingLimiter } from "../support/counting-limiter";
import { messageCount, uniqueThread } from "../support/runs";
import { authHeaders, createTenant } from "../support/tenants";

/**
 * Importing history (`POST /v1/threads/:id/state` with `append`) counted one op a message, one request
 * per 10: a 20,000-message import spent 2,000 of an admin's 600 a minute and failed midway with 429.
 * Appended messages now count one request per started 1,000 (other ops still one per 10); the route is
 * an admin's (rewrite_thread), and a member's batch routes keep counting per 10.
 */
async function call(key: string, path: string, body: unknown, vars: Partial<Env>): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`http://x${path}`, { method: "POST", headers: authHeaders(key), body: JSON.stringify(body) }),
    { ...env, ...vars },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const ADMIN_MINUTE = 600;
const chunk = (from: number, n: number) => ({
  ops: [{ op: "append", messages: Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `imported message ${from + i}` })) }],
});

describe("importing history into a thread", () => {
  it("20,000 messages in chunks of 1,000 fit one minute of an admin's allowance (20 of 600)", async () => {
    const t = await createTenant();
    const thread = uniqueThread("import");
    const { limiter, counts } = countingLimiter(ADMIN_MINUTE);
    for (let from = 0; from < 20_000; from += 1000) {
      const res = await call(t.adminKey, `/v1/threads/${thread}/state`, chunk(from, 1000), { RATE_LIMIT_ADMIN: limiter });
      expect(res.status, `messages from ${from}: ${await res.clone().text()}`).toBe(200);
    }
    expect(counts.get(`key:${t.adminKeyId}`)).toBe(20);
    expect(await messageCount(t.adminKey, thread)).toBe(20_000);
  }, 60_000);

  it("appended messages count one request per started 1,000; other ops one per 10", async () => {
    const t = await createTenant();
    for (const [body, counted] of [
      [chunk(0, 1000), 1],
      [{ ops: [...chunk(0, 1000).ops, ...chunk(1000, 1).ops] }, 2],
      [{ ops: [...chunk(0, 1000).ops, ...Array.from({ length: 11 }, (_, i) => ({ op: "set", channel: `c${i}`, value: i }))] }, 3],
    ] as const) {
      const { limiter, counts } = countingLimiter();
      const res = await call(t.adminKey, `/v1/threads/${uniqueThread("import")}/state`, body, { RATE_LIMIT_ADMIN: limiter });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(counts.get(`key:${t.adminKeyId}`)).toBe(counted);
    }
  });

  it("a member cannot flood: it may not import (403), and its conversation items still count one request per 10", async () => {
    const t = await createTenant({ memberScopes: ["session:*"] });
    const { limiter, counts } = countingLimiter();
    const vars = { RATE_LIMIT_MEMBER: limiter };
    const refused = await call(t.memberKey, `/v1/threads/${uniqueThread("import")}/state`, chunk(0, 1000), vars);
    expect(refused.status).toBe(403);
    const conv = await call(t.memberKey, "/v1/conversations", {}, vars);
    const id = ((await conv.json()) as { id: string }).id;
    const before = counts.get(`key:${t.memberKeyId}`) ?? 0;
    const items = Array.from({ length: 1000 }, (_, i) => ({ type: "message", role: "user", content: `item ${i}` }));
    const added = await call(t.memberKey, `/v1/conversations/${id}/items`, { items }, vars);
    expect(added.status, await added.clone().text()).toBeLessThan(300);
    expect((counts.get(`key:${t.memberKeyId}`) ?? 0) - before).toBe(100);
  });
});
