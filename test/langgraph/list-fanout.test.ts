import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { openCursor } from "../../src/core/cursor";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { countingLimiter } from "../support/counting-limiter";
import { authHeaders, createKey, createTenant } from "../support/tenants";
import { saverFor } from "./support";

/**
 * POST /v1/langgraph/list called the object of every thread the key reached, in one request: a
 * member key of a tenant with 100,000 LangGraph threads made 100,000 Durable Object calls per
 * request. Now a request visits at most 100 threads (a window, in id order: `threads_after`,
 * answered with `next_threads_after`), each visited thread counts (one request per started 10),
 * and a list without `threads_after` that would reach more is 400 BEM-132. EdgeweaveSaver pages by
 * windows, so `list` still yields every checkpoint.
 */
const meta = { source: "input" as const, step: -1, parents: {} };
async function putOne(saver: ReturnType<typeof saverFor>, threadId: string) {
  const cp = { ...emptyCheckpoint(), id: uuid6(-1) };
  return saver.put({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, cp, meta, {});
}

async function list(key: string, body: unknown, vars: Partial<Env> = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request("http://x/v1/langgraph/list", { method: "POST", headers: authHeaders(key), body: JSON.stringify(body) }),
    { ...env, ...vars },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

type Page = { tuples: { thread_id: string }[]; next_before?: string; next_threads_after?: string };

const windowOf = (after: string | undefined) => (after ? openCursor("langgraph_threads", after, "threads_after") : after);

describe("a cross-thread LangGraph list visits at most 100 threads per request", () => {
  it("250 threads: windows of 100 with next_threads_after, each counted per 10 threads; without threads_after 400 BEM-132; the saver lists them all", async () => {
    const t = await createTenant();
    const ids = Array.from({ length: 250 }, (_, i) => `w-${String(i).padStart(3, "0")}`);
    // The index holds 250 threads; three of them hold checkpoints, one in each window.
    await env.DB.batch(ids.map((id) => env.DB.prepare("INSERT INTO langgraph_threads (tenant_id, thread_id, created_at) VALUES (?, ?, 0)").bind(t.tenant, id)));
    const admin = saverFor(t.adminKey);
    for (const id of ["w-005", "w-150", "w-249"]) await putOne(admin, id);
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:*"] });

    const whole = await list(member.key, {});
    expect(whole.status).toBe(400);
    const error = ((await whole.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("BEM-132");
    expect(error.message).toMatch(/threads_after/);

    const seen: string[] = [];
    const windows: (string | undefined)[] = [];
    for (let after: string | undefined = ""; after !== undefined; ) {
      const { limiter, counts } = countingLimiter();
      const res = await list(member.key, { threads_after: after }, { RATE_LIMIT_LANGGRAPH: limiter });
      expect(res.status).toBe(200);
      const page = (await res.json()) as Page;
      seen.push(...page.tuples.map((x) => x.thread_id));
      windows.push(page.next_threads_after);
      // The access gate's count, then one more per started 10 threads visited.
      expect(counts.get(`key:${member.id}`)).toBe(windowOf(after) === "w-199" ? 5 : 10);
      after = page.next_threads_after;
    }
    // Each next_threads_after is the window's last thread id, with its check (src/core/cursor.ts).
    expect(windows.map(windowOf)).toEqual(["w-099", "w-199", undefined]);
    expect(seen).toEqual(["w-005", "w-150", "w-249"]);

    // The saver follows the windows (and `limit` across them).
    const listed: string[] = [];
    for await (const x of saverFor(member.key).list({ configurable: {} })) listed.push(x.config.configurable?.thread_id);
    expect(listed).toEqual(["w-005", "w-150", "w-249"]);
    const two: string[] = [];
    for await (const x of saverFor(member.key).list({ configurable: {} }, { limit: 2 })) two.push(x.config.configurable?.thread_id);
    expect(two).toEqual(["w-005", "w-150"]);
  });

  it("100 threads or fewer: one request, newest first across them, as before (no threads_after needed)", async () => {
    const t = await createTenant();
    const admin = saverFor(t.adminKey);
    for (const id of ["b", "a", "c"]) await putOne(admin, id);
    const res = await list(t.adminKey, {});
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    expect(page.tuples.map((x) => x.thread_id)).toEqual(["c", "a", "b"]);
    expect(page.next_threads_after).toBeUndefined();
  });
});
