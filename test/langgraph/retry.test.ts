import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { retryWait } from "../../src/langgraph-client/http";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";
import { EdgeweaveStore } from "../../src/langgraph-client/store";
import { createTenant } from "../support/tenants";
import { BASE_URL, workerFetch } from "./support";

/**
 * Issue #24.12: the saver and the store client retry 429 (the key's rate limit), honouring
 * Retry-After, a bounded number of times. The 429s come from in front of the Worker, in the shape
 * edgeweave's limiter answers (BEM-024 with Retry-After), since 3,000 calls a minute are not
 * reached here; everything else is the Worker.
 */
function limitedFirst(n: number, retryAfter: string, counter: { calls: number; at: number[] }): typeof fetch {
  const worker = workerFetch();
  return async (input, init) => {
    counter.calls++;
    counter.at.push(Date.now());
    if (counter.calls <= n) {
      return new Response(JSON.stringify({ error: { code: "BEM-024", message: "Rate limit exceeded for this key; retry after 60 seconds" } }), {
        status: 429,
        headers: { "content-type": "application/json", "retry-after": retryAfter },
      });
    }
    return worker(input, init);
  };
}
const meta = { source: "input" as const, step: -1, parents: {} };
const put = (saver: EdgeweaveSaver, thread: string) =>
  saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, { ...emptyCheckpoint(), id: uuid6(-1) }, meta, {});

describe("429 is retried after Retry-After, a bounded number of times", () => {
  it("the saver's write waits out two 429s (Retry-After: 1) and is stored", async () => {
    const t = await createTenant();
    const counter = { calls: 0, at: [] as number[] };
    const saver = new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: limitedFirst(2, "1", counter) });
    await put(saver, "retried");
    expect(counter.calls).toBe(3);
    expect(counter.at[1]! - counter.at[0]!).toBeGreaterThanOrEqual(850);
    expect(await saver.getTuple({ configurable: { thread_id: "retried" } })).toBeDefined();
  });

  it("past maxRetries the 429 is thrown as EdgeweaveError BEM-024", async () => {
    const t = await createTenant();
    const counter = { calls: 0, at: [] as number[] };
    const saver = new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: limitedFirst(100, "0", counter), retry: { maxRetries: 2 } });
    await expect(put(saver, "refused")).rejects.toMatchObject({ status: 429, code: "BEM-024" });
    expect(counter.calls).toBe(3);
  });

  it("the store client retries too", async () => {
    const t = await createTenant();
    const counter = { calls: 0, at: [] as number[] };
    const store = new EdgeweaveStore({ baseUrl: BASE_URL, apiKey: t.adminKey, fetch: limitedFirst(1, "0", counter) });
    await store.put(["docset", "r"], "k", { v: 1 });
    expect(counter.calls).toBe(2);
    expect((await store.get(["docset", "r"], "k"))?.value).toEqual({ v: 1 });
  });

  it("the wait: Retry-After in seconds or as a date, else doubling from 1 s; never past maxWaitMs", () => {
    const h = (v?: string) => new Headers(v === undefined ? {} : { "retry-after": v });
    const none = () => 0;
    expect(retryWait(h("2"), 0, 60_000, 0, none)).toBe(2000);
    expect(retryWait(h(new Date(5000).toUTCString()), 0, 60_000, 1000, none)).toBe(4000);
    expect(retryWait(h(), 0, 60_000, 0, none)).toBe(1000);
    expect(retryWait(h(), 3, 60_000, 0, none)).toBe(8000);
    expect(retryWait(h("600"), 0, 30_000, 0, none)).toBe(30_000);
    expect(retryWait(h("10"), 0, 60_000, 0, () => 1)).toBe(9000);
  });
});
