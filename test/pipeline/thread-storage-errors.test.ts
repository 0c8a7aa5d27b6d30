import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { threadObjectName } from "../../src/thread/thread-id";
import { loggedLines } from "../support/logs";
import { api, createTenant } from "../support/tenants";

/**
 * Issue 11, finding 5 (last part): a failure reading the thread's own storage during a
 * turn was reported as 503 BEM-065 ("long-term memory is unavailable"). It is the
 * thread's: 503 BEM-098, with the real cause in the log (never in the body), nothing stored.
 */
describe("a thread whose storage fails during a turn", () => {
  it("a run that reads the whole thread (middleware) is 503 BEM-098, cause logged, nothing stored", async () => {
    const t = await createTenant();
    const thread = `broken-${crypto.randomUUID().slice(0, 8)}`;
    const chat = (text: string) =>
      api("/v1/chat/completions", {
        key: t.adminKey,
        body: { model: "offline-echo", agent: "long-chat", thread_id: thread, messages: [{ role: "user", content: text }] },
      });
    expect((await chat("first")).status).toBe(200);
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, thread)));
    // A stored message the object can no longer decode: its own storage failing, not D1's.
    const before = await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE messages SET json = '{not json' WHERE role = 'user'");
      return state.storage.sql.exec("SELECT count(*) AS n FROM checkpoints").one().n;
    });

    const res = await chat("second");
    const text = await res.text();
    expect(res.status, text).toBe(503);
    expect(JSON.parse(text).error.code).toBe("BEM-098");
    expect(text).not.toMatch(/SyntaxError|JSON/);
    expect(loggedLines().some((l) => l.includes('"BEM-098"') && l.includes("SyntaxError"))).toBe(true);
    expect(await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("SELECT count(*) AS n FROM checkpoints").one().n)).toBe(before);

    // A run that reads only the newest window of the same thread fails the same way.
    const plain = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "offline-echo", thread_id: thread, messages: [{ role: "user", content: "third" }] },
    });
    const plainText = await plain.text();
    expect([plain.status, JSON.parse(plainText).error?.code], plainText).toEqual([503, "BEM-098"]);
  });
});
