import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../src/core/principal";
import { saveTurn } from "../../src/pipeline/save-turn";
import { remove } from "../../src/pipeline/state";
import { routerFor } from "../../src/routing/bundled";
import { ThreadClient } from "../../src/thread/client";
import { deliver, deliveryCount } from "../webhooks/helpers";
import { snapshot } from "../support/runs";
import { api, createKey, createTenant, type TestTenant } from "../support/tenants";
import { inHeldThread } from "../support/held-thread";
import { settleBookkeeping } from "../support/bookkeeping";

/**
 * Regression tests for issue 11, findings 2 (members reach every thread), 3 (agents
 * widen grants) and 4 (members rewrite history through chat). Each failed on the code
 * before src/auth/policy.ts.
 */

let t: TestTenant;
let keys: { none: string; support: string; sessions: string; full: string };

const say = (text: string) => [{ role: "user", content: text }];
const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api("/v1/chat/completions", { key, body: { model: "auto", ...body }, headers });
async function code(res: Response): Promise<[number, string | undefined]> {
  const body = (await res.json()) as { error?: { code: string } };
  return [res.status, body.error?.code];
}
const threadRows = async () => {
  // An earlier turn's list time may still be on its way (up to 1 s): sent first, so it is not taken for a denied call's.
  await settleBookkeeping(t.tenant);
  return (await env.DB.prepare("SELECT thread_id, updated_at FROM threads WHERE tenant_id = ? ORDER BY thread_id").bind(t.tenant).all()).results;
};

beforeAll(async () => {
  t = await createTenant();
  keys = {
    none: t.memberKey,
    support: (await createKey(t.tenant, { role: "member", scopes: ["session:support-*"] })).key,
    sessions: (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key,
    full: (await createKey(t.tenant, { role: "member", scopes: ["session:*", "organization:acme", "docset:support"] })).key,
  };
  for (const thread of ["ceo", "support-1", "f4"]) {
    for (const text of ["first", "second"]) expect((await chat(t.adminKey, { thread_id: thread, messages: say(`${thread} ${text}`) })).status).toBe(200);
  }
  expect((await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "plan", text: "secret-plan-42" } })).status).toBe(201);
});

describe("finding 2: a member reaches thread t iff its grants match session:t", () => {
  it("GET /v1/threads lists only the threads the key may read", async () => {
    const list = async (key: string) =>
      ((await (await api("/v1/threads?limit=100", { key })).json()) as { threads: { thread_id: string }[] }).threads.map((x) => x.thread_id).sort();
    expect(await list(keys.none)).toEqual([]);
    expect(await list(keys.support)).toEqual(["support-1"]);
    expect(await list(keys.sessions)).toEqual(["ceo", "f4", "support-1"]);
    expect(await list(t.adminKey)).toEqual(["ceo", "f4", "support-1"]);
  });

  it("no grant for session:ceo: state, history, chat (body or X-Thread-Id), invoke and fork are 403 BEM-025 and change nothing", async () => {
    const before = await snapshot(t.adminKey, "ceo");
    const rows = await threadRows();
    for (const key of [keys.none, keys.support]) {
      expect(await code(await api("/v1/threads/ceo/state", { key }))).toEqual([403, "BEM-025"]);
      expect(await code(await api("/v1/threads/ceo/history", { key }))).toEqual([403, "BEM-025"]);
      expect(await code(await chat(key, { thread_id: "ceo", messages: say("what did the ceo say?") }))).toEqual([403, "BEM-025"]);
      expect(await code(await chat(key, { messages: say("what did the ceo say?") }, { "x-thread-id": "ceo" }))).toEqual([403, "BEM-025"]);
      expect(
        await code(
          await api("/v1/invoke", {
            key,
            body: { agent_name: "planner", context: { user_name: "m" }, session_id: "ceo", content: [{ type: "text", text: "hi" }] },
          }),
        ),
      ).toEqual([403, "BEM-025"]);
      expect(await code(await api("/v1/memory/context", { key, body: { scopes: ["session:ceo"], max_tokens: 1000 } }))).toEqual([403, "BEM-023"]);
    }
    expect(await snapshot(t.adminKey, "ceo")).toEqual(before);
    expect(await threadRows()).toEqual(rows);
  });

  it("a prefix grant reaches the matching threads (read and run), and a new one it names", async () => {
    expect((await api("/v1/threads/support-1/state", { key: keys.support })).status).toBe(200);
    expect((await chat(keys.support, { thread_id: "support-1", messages: say("more") })).status).toBe(200);
    expect((await chat(keys.support, { thread_id: "support-2", messages: say("new") })).status).toBe(200);
  });

  it("a webhook delivery naming a thread outside the hook's grants is 403 BEM-025, nothing stored", async () => {
    const reg = await api("/v1/webhooks", {
      key: t.adminKey,
      body: { name: "h", agent_name: "planner", thread_from: "/t", text_from: "/x", scopes: ["session:support-*"] },
    });
    expect(reg.status).toBe(201);
    const hook = (await reg.json()) as { id: string; secret: string };
    const before = await snapshot(t.adminKey, "ceo");
    expect(await code(await deliver(hook, { t: "ceo", x: "leak it" }))).toEqual([403, "BEM-025"]);
    expect(await deliveryCount(hook.id)).toBe(0);
    expect(await snapshot(t.adminKey, "ceo")).toEqual(before);
  });
});

describe("finding 3: loaded scopes = the agent's memory_scopes ∩ the caller's grants, else 403 BEM-023", () => {
  it("an agent's layer the key lacks is refused, not loaded", async () => {
    const res = await chat(keys.sessions, { agent: "support", model: "offline-echo", messages: say("what is the plan?") });
    const text = await res.clone().text();
    expect(await code(res)).toEqual([403, "BEM-023"]);
    expect(text).not.toContain("secret-plan-42");
  });

  it("with every layer granted the agent runs and loads them", async () => {
    const res = await chat(keys.full, { agent: "support", model: "offline-echo", messages: say("what is the plan?") });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain("secret-plan-42");
  });

  it("a webhook carries the grants given at registration: too few for its agent is 403 BEM-023", async () => {
    const base = { name: "h", agent_name: "support", thread_from: "/t", text_from: "/x", rewrite_history: true };
    expect(await code(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, scopes: ["session:*"] } }))).toEqual([403, "BEM-023"]);
    const ok = await api("/v1/webhooks", { key: t.adminKey, body: { ...base, scopes: ["session:*", "organization:acme", "docset:support"] } });
    expect(ok.status).toBe(201);
    expect(await ok.json()).toMatchObject({ scopes: ["session:*", "organization:acme", "docset:support"], rewrite_history: true });
  });
});

describe("finding 4: rewriting stored history needs the rewrite right on every route", () => {
  it("a member's checkpoint_id (chat and invoke) and rewriting agents are 403 BEM-022, nothing changed", async () => {
    const before = await snapshot(t.adminKey, "f4");
    const first = (before.history as { checkpoints: { id: string }[] }).checkpoints.at(-1)!.id;
    const rows = await threadRows();
    expect(await code(await chat(keys.sessions, { thread_id: "f4", checkpoint_id: first, messages: say("branch") }))).toEqual([403, "BEM-022"]);
    expect(
      await code(
        await api("/v1/invoke", {
          key: keys.sessions,
          body: { agent_name: "planner", context: { user_name: "m" }, session_id: "f4", checkpoint_id: first, content: [{ type: "text", text: "branch" }] },
        }),
      ),
    ).toEqual([403, "BEM-022"]);
    // long-chat summarizes the stored thread; assistant's trim shapes only what the model sees (no rewrite right needed).
    expect(await code(await chat(keys.full, { agent: "long-chat", thread_id: "f4", messages: say("trim me") }))).toEqual([403, "BEM-022"]);
    expect(await code(await api("/v1/threads/f4/fork", { key: keys.sessions, body: { checkpoint_id: first } }))).toEqual([403, "BEM-022"]);
    expect(await code(await api("/v1/threads/f4/state", { key: keys.sessions, body: { ops: [{ op: "remove_all" }] } }))).toEqual([403, "BEM-022"]);
    expect(await snapshot(t.adminKey, "f4")).toEqual(before);
    expect(await threadRows()).toEqual(rows);
    // The same calls without rewriting are fine for the member; with the right, for the admin.
    expect((await chat(keys.sessions, { thread_id: "f4", messages: say("append only") })).status).toBe(200);
    expect((await chat(keys.full, { agent: "assistant", thread_id: "f4", messages: say("trimmed view only") })).status).toBe(200);
    expect((await chat(t.adminKey, { thread_id: "f4", checkpoint_id: first, messages: say("branch") })).status).toBe(200);
  });

  it("a hook whose agent rewrites history needs rewrite_history at registration (403 BEM-022 otherwise)", async () => {
    const body = { name: "h", agent_name: "long-chat", thread_from: "/t", text_from: "/x", scopes: ["session:*"] };
    expect(await code(await api("/v1/webhooks", { key: t.adminKey, body }))).toEqual([403, "BEM-022"]);
    expect((await api("/v1/webhooks", { key: t.adminKey, body: { ...body, rewrite_history: true } })).status).toBe(201);
  });
});

describe("finding 4, behind the declared check: saved writes that remove stored messages", () => {
  it("need the rewrite right even from a middleware or tool that did not declare it (BEM-022, thread unchanged)", async () => {
    const id = "net-1";
    const thread = new ThreadClient(env, t.tenant, id);
    await thread.appendMessages([{ id: "m1", role: "user", content: "keep me" }], "input");
    const before = await thread.getHistory({ limit: 10 });
    const member: Principal = { kind: "tenant", tenant: t.tenant, role: "member", keyId: "k", grants: ["session:*"] };
    const steps = [{ index: 0, toolErrors: [], writes: [{ source: "undeclared", update: { messages: [remove("m1")] } }] }];
    const route = routerFor(env).resolve({ content: "x", model_override: "offline-echo" });
    const save = (principal: Principal) =>
      inHeldThread(t.tenant, id, (thread) =>
        saveTurn({ thread, principal, reducers: {}, record: { model: route.model, route, attempts: [], scopes: [] }, prefix: [], steps }),
      );
    await expect(save(member)).rejects.toMatchObject({ code: "BEM-022" });
    expect(await thread.getHistory({ limit: 10 })).toEqual(before);
    await expect(save({ ...member, role: "admin", grants: ["*"] })).resolves.toBeTypeOf("string");
  });
});
