import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createKey } from "../support/tenants";
import { tenantForRuns, uniqueThread } from "../support/runs";

/**
 * A run stores which facts it loaded (last_route.memory: ids, scopes, keys) with its checkpoint, and a
 * stored Response keeps the same report in `edgeweave.memory`. A key that reaches the thread but has no
 * grant on a scope the run loaded reads the thread too: it sees the report's entries only for scopes it
 * may read (read_scope), the others counted in `facts_hidden` (and `memory_scopes` likewise in
 * `memory_scopes_hidden`), never their ids, scope names or keys. The stored checkpoint is not rewritten:
 * the admin still reads every entry.
 */
const tenant = tenantForRuns();
const SECRET_SCOPE = "organization:acme-secret";

type Fact = { id: string };
const json = async <T>(r: Response): Promise<T> => {
  if (r.status !== 200 && r.status !== 201) throw new Error(`${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};

async function setup() {
  const t = tenant();
  const thread = uniqueThread("rv");
  const member = (await createKey(t.tenant, { role: "member", scopes: [`session:${thread}`] })).key;
  const secret = await json<Fact>(
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: SECRET_SCOPE, kind: "plan", key: "merger-codename", text: "Project Falcon" } }),
  );
  const mine = await json<Fact>(await api("/v1/memory/facts", { key: member, body: { scope: `session:${thread}`, kind: "note", text: "prefers tea" } }));
  // The admin's runs load the secret scope and the session (a model that does not repeat them).
  fakeOpenAI().reply("ok").reply("ok");
  await json(
    await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, memory_scopes: [SECRET_SCOPE, "session"], messages: [{ role: "user", content: "hello" }] },
    }),
  );
  const response = await json<{ id: string }>(
    await api("/v1/responses", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", conversation: thread, memory_scopes: [SECRET_SCOPE, "session"], input: "again" },
    }),
  );
  return { t, thread, member, secret, mine, response: response.id };
}

const leaks = (text: string, secretId: string) => [SECRET_SCOPE, secretId, "merger-codename"].filter((s) => text.includes(s));

describe("a run's memory report, read by a key without a grant on every scope it loaded", () => {
  it("thread state, history and a stored response show the member only its readable scopes' entries, the rest counted", async () => {
    const { t, thread, member, secret, mine, response } = await setup();
    const state = await api(`/v1/threads/${thread}/state`, { key: member });
    const history = await api(`/v1/threads/${thread}/history?limit=100`, { key: member });
    const stored = await api(`/v1/responses/${response}`, { key: member });
    for (const r of [state, history, stored]) expect(r.status).toBe(200);
    const [stateText, historyText, storedText] = [await state.text(), await history.text(), await stored.text()];
    for (const text of [stateText, historyText, storedText]) expect(leaks(text, secret.id)).toEqual([]);

    const route = (JSON.parse(stateText) as { channels: { last_route: Record<string, unknown> } }).channels.last_route as {
      memory_scopes: string[];
      memory_scopes_hidden?: number;
      memory: { facts: { id: string; scope: string }[]; facts_hidden?: number };
    };
    expect(route.memory_scopes).toEqual([`session:${thread}`]);
    expect(route.memory_scopes_hidden).toBe(1);
    expect(route.memory.facts.map((f) => f.id)).toEqual([mine.id]);
    expect(route.memory.facts_hidden).toBe(1);
    const body = JSON.parse(storedText) as { edgeweave: { memory: { facts: { id: string }[]; facts_hidden?: number } } };
    expect(body.edgeweave.memory.facts.map((f) => f.id)).toEqual([mine.id]);
    expect(body.edgeweave.memory.facts_hidden).toBe(1);

    // The admin reads every entry: the stored checkpoint and record are unchanged.
    const adminState = await (await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).text();
    const adminHistory = await (await api(`/v1/threads/${thread}/history?limit=100`, { key: t.adminKey })).text();
    const adminStored = await (await api(`/v1/responses/${response}`, { key: t.adminKey })).text();
    for (const text of [adminState, adminHistory, adminStored]) {
      expect(leaks(text, secret.id)).toEqual([SECRET_SCOPE, secret.id, "merger-codename"]);
      expect(text).not.toContain("_hidden");
    }
  });
});
