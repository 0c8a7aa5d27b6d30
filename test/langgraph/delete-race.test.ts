import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";
import { api, createTenant } from "../support/tenants";
import { BASE_URL, saverFor } from "./support";
import { completionAfter, fakeOpenAI } from "../support/fake-openai";
import { uniqueThread } from "../support/runs";
import { clearUpstream } from "../support/upstream";
import { waitFor } from "../webhooks/helpers";

/**
 * A LangGraph thread's D1 index row is ordered with a delete as a turn's thread-list entry is: written inside the
 * thread's object under its lease. It had been written by the Worker after the put's RPC answered, so a delete
 * that landed between the object's answer and that write was followed by the write: the row outlived the thread
 * (an empty thread listed, counted against the quota) until someone deleted it again.
 */
describe("a LangGraph put racing a thread delete", () => {
  afterEach(clearUpstream);

  it("a delete that lands as the object answers a put creating the thread leaves no index row and no count", async () => {
    const t = await createTenant();
    const threadId = "lg-raced";
    const deletes: Promise<unknown>[] = [];
    const threads = new Proxy(env.THREADS, {
      get(target, prop) {
        if (prop !== "get") return Reflect.get(target, prop).bind(target);
        return (id: DurableObjectId) => {
          const stub = target.get(id);
          return new Proxy(stub, {
            get(s, name) {
              const member = Reflect.get(s, name);
              if (typeof name !== "string" || !name.startsWith("lg") || typeof member !== "function") return member;
              // The delete lands as soon as the object has answered the put, before the Worker goes on.
              return async (...args: unknown[]) => {
                const answer: unknown = await Reflect.apply(member, s, args);
                if (deletes.length === 0) deletes.push(s.destroy({ tenant: t.tenant, threadId }));
                await Promise.all(deletes);
                return answer;
              };
            },
          });
        };
      },
    });
    const ctx = createExecutionContext();
    const saver = new EdgeweaveSaver({
      baseUrl: BASE_URL,
      apiKey: t.adminKey,
      fetch: async (input, init) => app.fetch(new Request(input, init), { ...env, THREADS: threads }, ctx),
    });
    const cp = { ...emptyCheckpoint(), id: uuid6(-1) };
    await saver.put({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, cp, { source: "input", step: -1, parents: {} }, {});
    expect(deletes.length).toBe(1);
    await Promise.all(deletes);
    await waitOnExecutionContext(ctx);

    // The delete came second: the thread is gone, and nothing names it.
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeUndefined();
    const row = await env.DB.prepare("SELECT 1 AS n FROM langgraph_threads WHERE tenant_id = ? AND thread_id = ?").bind(t.tenant, threadId).first();
    expect(row).toBeNull();
    const counted = await env.DB.prepare("SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = 'threads'").bind(t.tenant).first<{ n: number }>();
    expect(counted?.n ?? 0).toBe(0);
  });

  it("a put to a thread id a turn is running on waits for the turn's save, as every write ordered with a delete does", async () => {
    const t = await createTenant();
    const threadId = uniqueThread("lg-behind");
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    const provider = fakeOpenAI().respond(completionAfter(() => opened, "held"));
    const turn = api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: threadId, messages: [{ role: "user", content: "hi" }] },
    });
    await waitFor("the turn to reach its provider", async () => (provider.calls.length === 1 ? true : undefined));
    const cp = { ...emptyCheckpoint(), id: uuid6(-1) };
    let landed = false;
    const put = saverFor(t.adminKey)
      .put({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, cp, { source: "input", step: -1, parents: {} }, {})
      .then(() => (landed = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(landed).toBe(false);
    open();
    expect((await turn).status).toBe(200);
    await put;
    expect(await saverFor(t.adminKey).getTuple({ configurable: { thread_id: threadId } })).toBeDefined();
  });
});
