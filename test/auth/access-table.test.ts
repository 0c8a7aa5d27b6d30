import { env, exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThreadClient } from "../../src/thread/client";
import { sign } from "../../src/webhooks/signature";
import { checkpointPut } from "../support/checkpoint-put";
import { settleBookkeeping } from "../support/bookkeeping";
import { appRoutes } from "../support/routes";
import { api, createKey, createTenant, OPERATOR_KEY, type TestTenant } from "../support/tenants";

/**
 * Every route the app registers (read from app.routes, so a new route fails this test
 * until it is declared and listed here) × seven principals: the expected outcome,
 * and for every denial a proof that nothing changed anywhere.
 *
 * Outcomes: allow (2xx) · deny (401/403, coded; no row, thread or key changed) ·
 * own (another tenant's key: it may act on its own tenant, and tenant A is untouched).
 */

const PRINCIPALS = ["operator", "member_none", "member_a", "member_org", "other_admin", "webhook", "admin"] as const;
type Who = (typeof PRINCIPALS)[number];
type Outcome = "allow" | "deny" | "own";
type Call = { method: string; path: string; body?: unknown; headers?: Record<string, string>; signed?: boolean };
type Row = { call: (who: Who) => Promise<Call> | Call; expect: Partial<Record<Who, Outcome>> & { default: Outcome } };

let A: TestTenant;
let B: TestTenant;
let keyOf: Record<Exclude<Who, "webhook">, string>;
let hook: { id: string; secret: string };
let firstCheckpoint: string;

const uid = () => crypto.randomUUID().slice(0, 8);
/** Every thread a call may touch or the setup made (a fresh thread joins when made): their heads are compared and their late bookkeeping settled. */
const known = { A: ["a-1", "a-del", "a-new", "ceo"], B: ["a-1"] };
const threads = () => known;

async function made<T>(res: Promise<Response>, status = 201): Promise<T> {
  const r = await res;
  if (r.status !== status) throw new Error(`setup failed: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

beforeAll(async () => {
  // Tenants of the files that ran before this one in the shared runtime: their threads may still send
  // bookkeeping (up to 1 s after a turn, 30 s after a failed send), which no call here made.
  await env.DB.batch([env.DB.prepare(`DROP TABLE IF EXISTS ${EARLIER}`), env.DB.prepare(`CREATE TABLE ${EARLIER} AS SELECT id FROM tenants`)]);
  A = await createTenant({ memberScopes: [] });
  B = await createTenant();
  keyOf = {
    operator: OPERATOR_KEY,
    admin: A.adminKey,
    member_none: A.memberKey,
    member_a: (await createKey(A.tenant, { role: "member", scopes: ["session:a*"] })).key,
    member_org: (await createKey(A.tenant, { role: "member", scopes: ["organization:acme"] })).key,
    other_admin: B.adminKey,
  };
  for (const id of ["a-1", "a-del", "ceo"])
    await made(
      api("/v1/chat/completions", { key: A.adminKey, body: { model: "offline-echo", thread_id: id, messages: [{ role: "user", content: `hello ${id}` }] } }),
      200,
    );
  firstCheckpoint = (await new ThreadClient(env, A.tenant, "a-1").getHistory({ limit: 1 })).checkpoints[0]!.id;
  await made(api("/v1/memory/facts", { key: A.adminKey, body: { scope: "organization:acme", kind: "note", text: "acme fact" } }));
  hook = await made(
    api("/v1/webhooks", { key: A.adminKey, body: { name: "tbl", agent_name: "planner", thread_from: "/t", text_from: "/x", scopes: ["session:a*"] } }),
  );
  await createSnapshots();
});
afterAll(dropSnapshots);

/**
 * Everything a call could change: every row of these D1 tables (queue bookkeeping aside, which the
 * consumer writes on its own time; of a delivery, the columns a call sets), and the threads' heads.
 * `tenant` picks a row of tenant A (for another tenant's calls, which may change their own rows).
 */
const WATCHED: { table: string; tenant: string; columns?: string }[] = [
  { table: "tenants", tenant: "id = ?" },
  { table: "api_keys", tenant: "tenant_id = ?" },
  { table: "budgets", tenant: "tenant_id = ?" },
  { table: "facts", tenant: "tenant_id = ?" },
  { table: "fact_versions", tenant: "tenant_id = ?" },
  { table: "threads", tenant: "tenant_id = ?" },
  { table: "store_items", tenant: "tenant_id = ?" },
  { table: "langgraph_threads", tenant: "tenant_id = ?" },
  { table: "usage", tenant: "tenant_id = ?" },
  { table: "webhooks", tenant: "tenant_id = ?" },
  { table: "webhook_signatures", tenant: "webhook_id IN (SELECT id FROM webhooks WHERE tenant_id = ?)" },
  { table: "responses", tenant: "tenant_id = ?" },
  { table: "conversations", tenant: "tenant_id = ?" },
  // Not `input`: the consumer clears it when the delivery's turn settles, on its own time like `status`.
  { table: "webhook_deliveries", tenant: "tenant_id = ?", columns: "webhook_id, delivery_id, tenant_id, thread_id" },
];
type Scope = "all" | "A";
/** Where a call's "before" is kept: tables in D1 itself, dropped after this file (test/schema.test.ts compares D1 with schema.sql). */
const BEFORE = "_access_table_before_";

/** The tenants that existed before this file (their ids, one table in D1), left out of "all". */
const EARLIER = `${BEFORE}earlier_tenants`;

/**
 * The rows a scope covers (rowid included, so a row deleted and written again counts as a change):
 * tenant A's, or every tenant's but those of earlier files (a new tenant a call made counts); tenant ids are ours, quoted.
 */
const rowsOf = (w: (typeof WATCHED)[number], scope: Scope) => {
  const where =
    scope === "A" ? w.tenant.replace("= ?", `= '${A.tenant.replaceAll("'", "''")}'`) : `NOT (${w.tenant.replace("= ?", `IN (SELECT id FROM ${EARLIER})`)})`;
  return `SELECT rowid AS _rowid, ${w.columns ?? "*"} FROM ${w.table} WHERE ${where}`;
};

async function heads(scope: Scope): Promise<(string | null)[]> {
  const all = Object.entries(threads()).flatMap(([t, ids]) => ids.map((id) => ({ tenant: t === "A" ? A.tenant : B.tenant, id })));
  return Promise.all(
    all
      .filter((t) => scope === "all" || t.tenant === A.tenant)
      .map(async (t) => (await new ThreadClient(env, t.tenant, t.id).getHistory({ limit: 1 })).checkpoints[0]?.id ?? null),
  );
}

/**
 * The world before a call: a copy of the scope's rows, made inside D1 in one batch, and the heads.
 * Copying and comparing (changedSince) in SQL keeps each check to two round trips whatever the shared
 * storage holds (reading every row out before and after each of ~500 calls took most of this file's minute).
 */
async function snapshot(scope: Scope): Promise<{ scope: Scope; heads: (string | null)[] }> {
  // Usage and list times that earlier turns on these threads still owe (sent up to 1 s after their answers) go first: they are not this call's.
  await Promise.all([settleBookkeeping(A.tenant, threads().A), settleBookkeeping(B.tenant, threads().B)]);
  await env.DB.batch(
    WATCHED.flatMap((w) => [`DELETE FROM ${BEFORE}${w.table}`, `INSERT INTO ${BEFORE}${w.table} ${rowsOf(w, scope)}`].map((q) => env.DB.prepare(q))),
  );
  return { scope, heads: await heads(scope) };
}

/** Empty copies of the watched tables' shapes, made once (creating tables per call would re-prepare every statement D1 caches). */
async function createSnapshots(): Promise<void> {
  await env.DB.batch(WATCHED.map((w) => env.DB.prepare(`CREATE TABLE ${BEFORE}${w.table} AS ${rowsOf(w, "all")} LIMIT 0`)));
}

/** What changed since the snapshot: the tables whose rows differ (either way), and "heads" when a thread moved. */
async function changedSince(before: { scope: Scope; heads: (string | null)[] }): Promise<string[]> {
  const diff = (w: (typeof WATCHED)[number]) => {
    const now = rowsOf(w, before.scope);
    const then = `SELECT * FROM ${BEFORE}${w.table}`;
    return `(SELECT count(*) FROM (${now} EXCEPT ${then})) + (SELECT count(*) FROM (${then} EXCEPT ${now})) AS ${w.table}`;
  };
  const counts = (await env.DB.prepare(`SELECT ${WATCHED.map(diff).join(", ")}`).first<Record<string, number>>()) ?? {};
  const changed = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([t]) => t);
  return JSON.stringify(await heads(before.scope)) === JSON.stringify(before.heads) ? changed : [...changed, "heads"];
}

async function dropSnapshots(): Promise<void> {
  await env.DB.batch([...WATCHED.map((w) => `${BEFORE}${w.table}`), EARLIER].map((t) => env.DB.prepare(`DROP TABLE IF EXISTS ${t}`)));
}

const all = (o: Outcome): Row["expect"] => ({ default: o });
const bearerOnly = (o: Outcome): Row["expect"] => ({ default: o, webhook: "deny" });
/** Tenant A's admin (and the operator's powers where noted); other tenants act on their own. */
const adminOnly = (extra: Partial<Record<Who, Outcome>> = {}): Row["expect"] => ({ default: "deny", admin: "allow", other_admin: "own", ...extra });

/** A call on a budget of tenant A, made for it by A's admin: only A's admin may read or change it. */
const budgetCall = (method: string, body?: unknown): Row => ({
  call: async () => {
    const made = await api(`/v1/admin/tenants/${A.tenant}/budgets`, { key: A.adminKey, body: { kind: "tenant", limit_usd: 1 } });
    const { id } = (await made.json()) as { id: string };
    return { method, path: `/v1/admin/tenants/${A.tenant}/budgets/${id}`, ...(body !== undefined ? { body } : {}) };
  },
  expect: { default: "deny", admin: "allow" },
});

const page = (path: string): [string, Row] => [`GET ${path}`, { call: () => ({ method: "GET", path }), expect: all("allow") }];
const say = (text: string) => [{ role: "user", content: text }];
const freshFact = async () =>
  (await made<{ id: string }>(api("/v1/memory/facts", { key: A.adminKey, body: { scope: "organization:acme", kind: "note", text: `f-${uid()}` } }))).id;

/** A response stored by tenant A's admin on thread a-1 (a conversation is a thread: any thread of the tenant). */
const freshResponse = async () =>
  (await made<{ id: string }>(api("/v1/responses", { key: A.adminKey, body: { model: "offline-echo", input: `r-${uid()}`, conversation: "a-1" } }), 200)).id;
/** A thread of tenant A that the `session:a*` member reaches (so its denial of a rewrite is BEM-022, not BEM-025). */
const freshThread = async () => {
  const id = `a-x-${uid()}`;
  known.A.push(id);
  await made(api("/v1/chat/completions", { key: A.adminKey, body: { model: "offline-echo", thread_id: id, messages: say("to remove") } }), 200);
  return id;
};
const firstItem = async (thread: string) =>
  (await made<{ data: { id: string }[] }>(api(`/v1/conversations/${thread}/items?order=asc&limit=1`, { key: A.adminKey }), 200)).data[0]!.id;
/** Reads and continuations on thread a-1: tenant A's admin and the `session:a*` member. */
const onA1 = (method: string, path: string | (() => Promise<string>), body?: unknown): Row => ({
  call: async () => ({ method, path: typeof path === "string" ? path : await path(), ...(body === undefined ? {} : { body }) }),
  expect: adminOnly({ member_a: "allow" }),
});

/** A LangGraph run of the planner (its layers: the session only) on the offline model. */
const apRun = { assistant_id: "planner", config: { configurable: { model: "offline-echo" } }, context: { user_name: "x" }, input: { messages: say("hi") } };
/** A finished LangGraph run of tenant A's admin on thread a-1: its id, from Content-Location. */
const freshRun = async () => {
  const res = await api("/v1/agent-protocol/threads/a-1/runs/wait", { key: A.adminKey, body: apRun });
  if (res.status !== 200) throw new Error(`setup failed: ${res.status} ${await res.text()}`);
  return res.headers.get("content-location")!.split("/").at(-1)!;
};

const b64 = (o: unknown) => btoa(JSON.stringify(o));
const lgPut = checkpointPut;
const acmeNs = ["organization", "acme"];
/** Checkpointer routes on thread a-1: tenant A's admin and the `session:a*` member reach it. */
const lgThread = (method: string, path: string, body?: unknown, extra: Partial<Record<Who, Outcome>> = {}): Row => ({
  call: () => ({ method, path, ...(body === undefined ? {} : { body }) }),
  expect: adminOnly({ member_a: "allow", ...extra }),
});
/** Store routes on organization:acme: tenant A's admin and the `organization:acme` member. */
const lgStore = (method: string, path: string, body?: unknown, extra: Partial<Record<Who, Outcome>> = {}): Row => ({
  call: () => ({ method, path, ...(body === undefined ? {} : { body: typeof body === "function" ? (body as () => unknown)() : body }) }),
  expect: adminOnly({ member_org: "allow", ...extra }),
});

const TABLE: Record<string, Row> = Object.fromEntries<Row>([
  page("/"),
  page("/landing.css"),
  page("/docs/init.js"),
  page("/docs/scalar.js"),
  page("/health"),
  page("/openapi.json"),
  page("/docs"),
  page("/ui"),
  page("/ui/"),
  page("/ui/inspector.js"),
  page("/ui/inspector.css"),
  page("/ui/favicon.svg"),
  ["GET /v1/models", { call: () => ({ method: "GET", path: "/v1/models" }), expect: bearerOnly("allow") }],
  ["GET /v1/models/:name", { call: () => ({ method: "GET", path: "/v1/models/offline-echo" }), expect: bearerOnly("allow") }],
  ["POST /v1/route", { call: () => ({ method: "POST", path: "/v1/route", body: { model: "auto", messages: say("hi") } }), expect: bearerOnly("allow") }],
  ["GET /v1/usage", { call: () => ({ method: "GET", path: "/v1/usage" }), expect: bearerOnly("allow") }],

  [
    "POST /v1/admin/tenants",
    { call: () => ({ method: "POST", path: "/v1/admin/tenants", body: { id: `t-${uid()}` } }), expect: { default: "deny", operator: "allow" } },
  ],
  ["GET /v1/admin/tenants", { call: () => ({ method: "GET", path: "/v1/admin/tenants" }), expect: { default: "deny", operator: "allow" } }],
  [
    "POST /v1/admin/tenants/:tenant/keys",
    {
      call: () => ({ method: "POST", path: `/v1/admin/tenants/${A.tenant}/keys`, body: { role: "member" } }),
      expect: { default: "deny", operator: "allow", admin: "allow" },
    },
  ],
  [
    "GET /v1/admin/tenants/:tenant/keys",
    { call: () => ({ method: "GET", path: `/v1/admin/tenants/${A.tenant}/keys` }), expect: { default: "deny", operator: "allow", admin: "allow" } },
  ],
  [
    "POST /v1/admin/tenants/:tenant/budgets",
    {
      call: () => ({ method: "POST", path: `/v1/admin/tenants/${A.tenant}/budgets`, body: { kind: "tenant", limit_usd: 1 } }),
      expect: { default: "deny", admin: "allow" },
    },
  ],
  [
    "GET /v1/admin/tenants/:tenant/budgets",
    { call: () => ({ method: "GET", path: `/v1/admin/tenants/${A.tenant}/budgets` }), expect: { default: "deny", admin: "allow" } },
  ],
  ["GET /v1/admin/tenants/:tenant/budgets/:id", budgetCall("GET")],
  ["PATCH /v1/admin/tenants/:tenant/budgets/:id", budgetCall("PATCH", { limit_usd: 1000 })],
  ["DELETE /v1/admin/tenants/:tenant/budgets/:id", budgetCall("DELETE")],
  [
    "DELETE /v1/admin/tenants/:tenant/keys/:id",
    {
      call: async () => ({ method: "DELETE", path: `/v1/admin/tenants/${A.tenant}/keys/${(await createKey(A.tenant, { role: "member" })).id}` }),
      expect: { default: "deny", operator: "allow", admin: "allow" },
    },
  ],

  [
    "GET /v1/threads",
    { call: () => ({ method: "GET", path: "/v1/threads?limit=100" }), expect: { default: "allow", operator: "deny", webhook: "deny", other_admin: "own" } },
  ],
  ["GET /v1/threads/:id/state", { call: () => ({ method: "GET", path: "/v1/threads/a-1/state" }), expect: adminOnly({ member_a: "allow" }) }],
  ["GET /v1/threads/:id/history", { call: () => ({ method: "GET", path: "/v1/threads/a-1/history" }), expect: adminOnly({ member_a: "allow" }) }],
  [
    "POST /v1/threads/:id/state",
    { call: () => ({ method: "POST", path: "/v1/threads/a-1/state", body: { ops: [{ op: "set", channel: "topic", value: uid() }] } }), expect: adminOnly() },
  ],
  [
    "POST /v1/threads/:id/fork",
    { call: () => ({ method: "POST", path: "/v1/threads/a-1/fork", body: { checkpoint_id: firstCheckpoint } }), expect: adminOnly() },
  ],
  ["DELETE /v1/threads/:id", { call: () => ({ method: "DELETE", path: "/v1/threads/a-del" }), expect: adminOnly() }],
  [
    "POST /v1/chat/completions",
    {
      call: () => ({ method: "POST", path: "/v1/chat/completions", body: { model: "offline-echo", thread_id: "a-1", messages: say("hi") } }),
      expect: adminOnly({ member_a: "allow" }),
    },
  ],
  [
    "POST /v1/invoke",
    {
      call: () => ({
        method: "POST",
        path: "/v1/invoke",
        body: {
          agent_name: "planner",
          context: { user_name: "x" },
          session_id: "a-new",
          model_override: "offline-echo",
          content: [{ type: "text", text: "hi" }],
        },
      }),
      expect: adminOnly({ member_a: "allow" }),
    },
  ],

  // Anthropic Messages: the same turn as chat (src/http/messages.ts); counting tokens runs nothing.
  [
    "POST /v1/messages",
    {
      call: () => ({ method: "POST", path: "/v1/messages", body: { model: "offline-echo", max_tokens: 64, thread_id: "a-1", messages: say("hi") } }),
      expect: adminOnly({ member_a: "allow" }),
    },
  ],
  [
    "POST /v1/messages/count_tokens",
    { call: () => ({ method: "POST", path: "/v1/messages/count_tokens", body: { model: "offline-echo", messages: say("hi") } }), expect: bearerOnly("allow") },
  ],

  // Responses and conversations: a conversation is a thread, a response a checkpoint of one (src/http/responses.ts, conversations.ts).
  ["POST /v1/responses", onA1("POST", "/v1/responses", { model: "offline-echo", input: "hi", conversation: "a-1" })],
  ["GET /v1/responses/:id", onA1("GET", async () => `/v1/responses/${await freshResponse()}`)],
  // Deleting a stored response rewrites what the thread keeps (rewrite_thread), as deleting a conversation item does.
  ["DELETE /v1/responses/:id", { call: async () => ({ method: "DELETE", path: `/v1/responses/${await freshResponse()}` }), expect: adminOnly() }],
  ["GET /v1/responses/:id/input_items", onA1("GET", async () => `/v1/responses/${await freshResponse()}/input_items`)],
  // A new conversation is a new thread conv_…: only a key whose grants match session:conv_… (here the admin) creates one.
  ["POST /v1/conversations", { call: () => ({ method: "POST", path: "/v1/conversations", body: { metadata: { k: uid() } } }), expect: adminOnly() }],
  ["GET /v1/conversations/:id", onA1("GET", "/v1/conversations/a-1")],
  ["POST /v1/conversations/:id", onA1("POST", "/v1/conversations/a-1", { metadata: { k: "v" } })],
  ["DELETE /v1/conversations/:id", { call: async () => ({ method: "DELETE", path: `/v1/conversations/${await freshThread()}` }), expect: adminOnly() }],
  ["GET /v1/conversations/:id/items", onA1("GET", "/v1/conversations/a-1/items")],
  ["POST /v1/conversations/:id/items", onA1("POST", "/v1/conversations/a-1/items", { items: [{ role: "user", content: "added" }] })],
  ["GET /v1/conversations/:id/items/:item_id", onA1("GET", async () => `/v1/conversations/a-1/items/${await firstItem("a-1")}`)],
  [
    "DELETE /v1/conversations/:id/items/:item_id",
    {
      call: async () => {
        const t = await freshThread();
        return { method: "DELETE", path: `/v1/conversations/${t}/items/${await firstItem(t)}` };
      },
      expect: adminOnly(),
    },
  ],

  [
    "POST /v1/memory/facts",
    {
      call: () => ({ method: "POST", path: "/v1/memory/facts", body: { scope: "organization:acme", kind: "note", text: uid() } }),
      expect: adminOnly({ member_org: "allow" }),
    },
  ],
  ["GET /v1/memory/facts", { call: () => ({ method: "GET", path: "/v1/memory/facts?scope=organization:acme" }), expect: adminOnly({ member_org: "allow" }) }],
  // The operator holds only `system`: another tenant's fact is not found (404), as for another tenant's admin;
  // so is a fact in a scope the key cannot read (the members without organization:acme): an id tells nothing.
  [
    "DELETE /v1/memory/facts/:id",
    {
      call: async () => ({ method: "DELETE", path: `/v1/memory/facts/${await freshFact()}` }),
      expect: adminOnly({ member_org: "allow", operator: "own", member_none: "own", member_a: "own" }),
    },
  ],
  [
    "GET /v1/memory/facts/:id/history",
    {
      call: async () => ({ method: "GET", path: `/v1/memory/facts/${await freshFact()}/history` }),
      expect: adminOnly({ member_org: "allow", operator: "own", member_none: "own", member_a: "own" }),
    },
  ],
  [
    "POST /v1/memory/context",
    {
      call: () => ({ method: "POST", path: "/v1/memory/context", body: { scopes: ["organization:acme"], max_tokens: 1000 } }),
      expect: adminOnly({ member_org: "allow" }),
    },
  ],

  [
    "POST /v1/memory/tasks",
    {
      call: () => ({ method: "POST", path: "/v1/memory/tasks", body: { op: "remember", scope: "organization:acme", kind: "note", text: uid() } }),
      expect: adminOnly(),
    },
  ],
  ["POST /v1/tasks/summarize", { call: () => ({ method: "POST", path: "/v1/tasks/summarize", body: { thread_id: "a-1" } }), expect: adminOnly() }],
  ["GET /v1/tasks/dead-letters", { call: () => ({ method: "GET", path: "/v1/tasks/dead-letters" }), expect: adminOnly({ operator: "allow" }) }],
  ["GET /v1/tasks/:id", { call: () => ({ method: "GET", path: "/v1/tasks/task_x" }), expect: adminOnly({ operator: "allow" }) }],

  [
    "POST /v1/webhooks",
    {
      call: () => ({
        method: "POST",
        path: "/v1/webhooks",
        body: { name: "x", agent_name: "planner", thread_from: "/t", text_from: "/x", scopes: ["session:a*"] },
      }),
      expect: adminOnly(),
    },
  ],
  ["GET /v1/webhooks", { call: () => ({ method: "GET", path: "/v1/webhooks" }), expect: adminOnly() }],
  [
    "DELETE /v1/webhooks/:id",
    {
      call: async () => {
        const h = await made<{ id: string }>(
          api("/v1/webhooks", { key: A.adminKey, body: { name: "d", agent_name: "planner", thread_from: "/t", text_from: "/x", scopes: ["session:a*"] } }),
        );
        return { method: "DELETE", path: `/v1/webhooks/${h.id}` };
      },
      expect: adminOnly(),
    },
  ],
  [
    "POST /v1/langgraph/threads/:thread_id/batch",
    { call: () => ({ method: "POST", path: "/v1/langgraph/threads/a-1/batch", body: { ops: [lgPut()] } }), expect: adminOnly({ member_a: "allow" }) },
  ],
  ["POST /v1/langgraph/threads/:thread_id/get", lgThread("POST", "/v1/langgraph/threads/a-1/get", {})],
  ["POST /v1/langgraph/threads/:thread_id/list", lgThread("POST", "/v1/langgraph/threads/a-1/list", {})],
  ["POST /v1/langgraph/threads/:thread_id/delta-history", lgThread("POST", "/v1/langgraph/threads/a-1/delta-history", { channels: ["messages"] })],
  // a-2 holds no LangGraph checkpoints when this runs: the admin gets 404 BEM-036 (deleting real
  // checkpoints: below, and test/langgraph/rewrites.test.ts); deleting rewrites history, so the member is denied.
  ["DELETE /v1/langgraph/threads/:thread_id", lgThread("DELETE", "/v1/langgraph/threads/a-2", undefined, { admin: "own", member_a: "deny" })],
  ["POST /v1/langgraph/threads/:thread_id/prune", lgThread("POST", "/v1/langgraph/threads/a-2/prune", { keep_last: 1 }, { member_a: "deny" })],
  // Across threads: filtered to what the key reaches (an empty list for a key that reaches none).
  [
    "POST /v1/langgraph/list",
    {
      call: () => ({ method: "POST", path: "/v1/langgraph/list", body: {} }),
      expect: { default: "allow", operator: "deny", webhook: "deny", other_admin: "own" },
    },
  ],
  ["PUT /v1/langgraph/store/items", lgStore("PUT", "/v1/langgraph/store/items", () => ({ namespace: acmeNs, key: uid(), value: { a: 1 } }))],
  ["GET /v1/langgraph/store/items", lgStore("GET", "/v1/langgraph/store/items?namespace=organization.acme&key=k")],
  ["DELETE /v1/langgraph/store/items", lgStore("DELETE", "/v1/langgraph/store/items", { namespace: acmeNs, key: "k" })],
  // Search is filtered by the key's grants: a key that reaches nothing there gets no items.
  [
    "POST /v1/langgraph/store/items/search",
    lgStore("POST", "/v1/langgraph/store/items/search", { namespace_prefix: acmeNs }, { member_none: "allow", member_a: "allow" }),
  ],
  [
    "POST /v1/langgraph/store/namespaces",
    {
      call: () => ({ method: "POST", path: "/v1/langgraph/store/namespaces", body: {} }),
      expect: { default: "allow", operator: "deny", webhook: "deny", other_admin: "own" },
    },
  ],
  [
    "POST /v1/langgraph/store/batch",
    lgStore("POST", "/v1/langgraph/store/batch", () => ({ ops: [{ op: "put", namespace: acmeNs, key: uid(), value: { a: 1 } }] })),
  ],
  // LangGraph's server API (src/http/agent-protocol-*.ts): the same thread rules as edgeweave's own routes.
  ["GET /v1/agent-protocol/info", { call: () => ({ method: "GET", path: "/v1/agent-protocol/info" }), expect: bearerOnly("allow") }],
  [
    "POST /v1/agent-protocol/assistants/search",
    { call: () => ({ method: "POST", path: "/v1/agent-protocol/assistants/search", body: {} }), expect: bearerOnly("allow") },
  ],
  [
    "GET /v1/agent-protocol/assistants/:assistant_id",
    { call: () => ({ method: "GET", path: "/v1/agent-protocol/assistants/planner" }), expect: bearerOnly("allow") },
  ],
  [
    "GET /v1/agent-protocol/assistants/:assistant_id/schemas",
    { call: () => ({ method: "GET", path: "/v1/agent-protocol/assistants/planner/schemas" }), expect: bearerOnly("allow") },
  ],
  [
    "POST /v1/agent-protocol/threads",
    { call: () => ({ method: "POST", path: "/v1/agent-protocol/threads", body: { thread_id: `a-ap-${uid()}` } }), expect: adminOnly({ member_a: "allow" }) },
  ],
  [
    "POST /v1/agent-protocol/threads/search",
    {
      call: () => ({ method: "POST", path: "/v1/agent-protocol/threads/search", body: {} }),
      expect: { default: "allow", operator: "deny", webhook: "deny", other_admin: "own" },
    },
  ],
  ["GET /v1/agent-protocol/threads/:thread_id", onA1("GET", "/v1/agent-protocol/threads/a-1")],
  ["PATCH /v1/agent-protocol/threads/:thread_id", onA1("PATCH", "/v1/agent-protocol/threads/a-1", { metadata: { k: "v" } })],
  [
    "DELETE /v1/agent-protocol/threads/:thread_id",
    { call: async () => ({ method: "DELETE", path: `/v1/agent-protocol/threads/${await freshThread()}` }), expect: adminOnly() },
  ],
  ["GET /v1/agent-protocol/threads/:thread_id/state", onA1("GET", "/v1/agent-protocol/threads/a-1/state")],
  [
    "GET /v1/agent-protocol/threads/:thread_id/state/:checkpoint_id",
    onA1("GET", () => Promise.resolve(`/v1/agent-protocol/threads/a-1/state/${firstCheckpoint}`)),
  ],
  [
    "POST /v1/agent-protocol/threads/:thread_id/state/checkpoint",
    {
      call: () => ({ method: "POST", path: "/v1/agent-protocol/threads/a-1/state/checkpoint", body: { checkpoint: { checkpoint_id: firstCheckpoint } } }),
      expect: adminOnly({ member_a: "allow" }),
    },
  ],
  [
    "POST /v1/agent-protocol/threads/:thread_id/state",
    { call: () => ({ method: "POST", path: "/v1/agent-protocol/threads/a-1/state", body: { values: { topic: uid() } } }), expect: adminOnly() },
  ],
  ["POST /v1/agent-protocol/threads/:thread_id/history", onA1("POST", "/v1/agent-protocol/threads/a-1/history", {})],
  ["POST /v1/agent-protocol/threads/:thread_id/runs/stream", onA1("POST", "/v1/agent-protocol/threads/a-1/runs/stream", apRun)],
  ["POST /v1/agent-protocol/threads/:thread_id/runs/wait", onA1("POST", "/v1/agent-protocol/threads/a-1/runs/wait", apRun)],
  ["POST /v1/agent-protocol/threads/:thread_id/runs", onA1("POST", "/v1/agent-protocol/threads/a-1/runs", apRun)],
  // Without a thread: a run of any key that may run (the agent's session layer is not there).
  [
    "POST /v1/agent-protocol/runs/stream",
    {
      call: () => ({ method: "POST", path: "/v1/agent-protocol/runs/stream", body: apRun }),
      expect: { default: "allow", operator: "deny", webhook: "deny", other_admin: "own" },
    },
  ],
  [
    "POST /v1/agent-protocol/runs/wait",
    {
      call: () => ({ method: "POST", path: "/v1/agent-protocol/runs/wait", body: apRun }),
      expect: { default: "allow", operator: "deny", webhook: "deny", other_admin: "own" },
    },
  ],
  ["GET /v1/agent-protocol/threads/:thread_id/runs", onA1("GET", "/v1/agent-protocol/threads/a-1/runs")],
  ["GET /v1/agent-protocol/threads/:thread_id/runs/:run_id", onA1("GET", async () => `/v1/agent-protocol/threads/a-1/runs/${await freshRun()}`)],
  ["GET /v1/agent-protocol/threads/:thread_id/runs/:run_id/join", onA1("GET", async () => `/v1/agent-protocol/threads/a-1/runs/${await freshRun()}/join`)],
  ["GET /v1/agent-protocol/threads/:thread_id/runs/:run_id/stream", onA1("GET", async () => `/v1/agent-protocol/threads/a-1/runs/${await freshRun()}/stream`)],
  // A finished run: 409 BEM-203 for whoever reaches it (cancelling a running one: test/agent-protocol/run-records.test.ts).
  [
    "POST /v1/agent-protocol/threads/:thread_id/runs/:run_id/cancel",
    {
      call: async () => ({ method: "POST", path: `/v1/agent-protocol/threads/a-1/runs/${await freshRun()}/cancel` }),
      expect: adminOnly({ admin: "own", member_a: "own" }),
    },
  ],
  // Last: an accepted delivery's turn runs on the queue in the background.
  [
    "POST /v1/webhooks/:id",
    {
      call: () => ({ method: "POST", path: `/v1/webhooks/${hook.id}`, body: { t: "a-1", x: `hi ${uid()}` }, signed: true }),
      expect: { default: "deny", webhook: "allow" },
    },
  ],
]);

async function send(who: Who, c: Call): Promise<Response> {
  const raw = c.body === undefined ? undefined : JSON.stringify(c.body);
  const headers: Record<string, string> = { ...(raw !== undefined ? { "content-type": "application/json" } : {}), ...(c.headers ?? {}) };
  if (who === "webhook") {
    if (c.signed) {
      const ts = String(Math.floor(Date.now() / 1000));
      Object.assign(headers, { "x-edgeweave-timestamp": ts, "x-edgeweave-signature": await sign(hook.secret, ts, raw ?? "") });
    } else headers.authorization = `Bearer ${hook.secret}`; // a hook's only credential, presented as a key
  } else headers.authorization = `Bearer ${keyOf[who]}`;
  return exports.default.fetch(`http://x${c.path}`, { method: c.method, headers, body: raw });
}

/** An accepted background task writes on the queue's time: wait for it, so it is not taken for the next call's doing. */
async function settled(status: number, text: string, call: Call, who: Who): Promise<void> {
  // A LangGraph background run goes on after its answer: joined, so its save is not the next call's doing.
  const run =
    status === 200 && call.path.endsWith("/runs") && call.method === "POST" ? (JSON.parse(text) as { run_id?: string; thread_id?: string }) : undefined;
  if (run?.run_id && run.thread_id && who !== "webhook") {
    await send(who, { method: "GET", path: `/v1/agent-protocol/threads/${run.thread_id}/runs/${run.run_id}/join` }).then((r) => r.text());
    return;
  }
  const taskId = status === 202 ? (JSON.parse(text) as { task_id?: string }).task_id : undefined;
  if (!taskId) return;
  for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
    const done = await env.DB.prepare("SELECT 1 FROM tasks_done WHERE task_id = ?1 UNION SELECT 1 FROM dead_letters WHERE task_id = ?1").bind(taskId).first();
    if (done) return;
  }
  throw new Error(`task ${taskId} did not finish`);
}

const routeKey = (r: { method: string; path: string }) => `${r.method} ${r.path}`;

describe("access table: every registered route × every principal", () => {
  it("every route declares its access and is listed here (a new route fails until it is)", () => {
    const routes = appRoutes();
    expect(routes.length).toBeGreaterThan(30);
    expect(routes.filter((r) => r.declared === undefined).map(routeKey), "routes without a declared requirement").toEqual([]);
    expect(
      routes.map(routeKey).filter((k) => !(k in TABLE)),
      "routes missing from TABLE",
    ).toEqual([]);
    expect(
      Object.keys(TABLE).filter((k) => !routes.some((r) => routeKey(r) === k)),
      "TABLE rows for no route",
    ).toEqual([]);
  });

  it("allows exactly what the table says; every denial is coded and changes nothing", async () => {
    const wrong: string[] = [];
    let calls = 0;
    let deniedAllowed = 0;
    for (const [route, row] of Object.entries(TABLE)) {
      for (const who of PRINCIPALS) {
        const expected = row.expect[who] ?? row.expect.default;
        const call = await row.call(who);
        // An allowed call may change anything it is allowed to: only denials and other tenants' calls are checked.
        const before = expected === "allow" ? undefined : await snapshot(expected === "own" ? "A" : "all");
        const res = await send(who, call);
        const text = await res.text();
        await settled(res.status, text, call, who);
        const changed = before ? await changedSince(before) : [];
        calls++;
        const where = `${route} as ${who} → ${res.status} ${text.slice(0, 120)}`;
        if (res.status >= 500) wrong.push(`${where}: server error`);
        else if (expected === "allow" && (res.status < 200 || res.status > 299)) wrong.push(`${where}: expected allow`);
        else if (expected === "deny") {
          // Our shape names it in `code`, Anthropic's (the Messages routes) in `bem_code`.
          const coded = /"(bem_)?code":"BEM-0(2[0-5]|90)"/.test(text);
          if (res.status !== 401 && res.status !== 403) {
            wrong.push(`${where}: expected deny`);
            if (res.status < 300) deniedAllowed++;
          } else if (!coded) wrong.push(`${where}: denial without its code`);
          if (changed.length > 0) wrong.push(`${where}: a denied call changed stored data (${changed.join(", ")})`);
        } else if (expected === "own" && changed.length > 0) wrong.push(`${where}: another tenant changed tenant A (${changed.join(", ")})`);
      }
    }
    console.log(
      JSON.stringify({
        access_table: { routes: Object.keys(TABLE).length, principals: PRINCIPALS.length, calls, wrong: wrong.length, denials_allowed: deniedAllowed },
      }),
    );
    expect(wrong).toEqual([]);
  }, 240_000);

  // Issue 25, finding 1: the roles of stored conversation items. A key allowed to add items may add
  // user, assistant and tool items; system and developer items are instructions, which are per call:
  // refused for every principal (400 BEM-111 where the call is otherwise allowed), nothing stored.
  it("conversation item roles × every principal: system and developer items are never stored", async () => {
    const wrong: string[] = [];
    const routes = [
      { route: "POST /v1/conversations", call: (items: unknown[]): Call => ({ method: "POST", path: "/v1/conversations", body: { items } }) },
      {
        route: "POST /v1/conversations/:id/items",
        call: (items: unknown[]): Call => ({ method: "POST", path: "/v1/conversations/a-1/items", body: { items } }),
      },
    ];
    for (const { route, call } of routes)
      for (const role of ["user", "assistant", "system", "developer"] as const)
        for (const who of PRINCIPALS) {
          const expected = TABLE[route]!.expect[who] ?? TABLE[route]!.expect.default;
          const instruction = role === "system" || role === "developer";
          const changes = !instruction && expected !== "deny";
          const before = changes && expected !== "own" ? undefined : await snapshot(expected === "own" ? "A" : "all");
          const res = await send(who, call([{ type: "message", role, content: `${role} item ${uid()}` }]));
          const text = await res.text();
          const changed = before ? await changedSince(before) : [];
          const where = `${route} with a ${role} item as ${who} → ${res.status} ${text.slice(0, 120)}`;
          if (expected === "deny") {
            if ((res.status !== 401 && res.status !== 403) || !/"code":"BEM-0(2[0-5]|90)"/.test(text)) wrong.push(`${where}: expected a coded deny`);
          } else if (instruction) {
            if (res.status !== 400 || !text.includes('"BEM-111"')) wrong.push(`${where}: expected 400 BEM-111`);
          } else if (res.status !== 200) wrong.push(`${where}: expected allow`);
          if (!changes && expected !== "own" && changed.length > 0) wrong.push(`${where}: changed stored data (${changed.join(", ")})`);
          if (expected === "own" && changed.length > 0) wrong.push(`${where}: another tenant changed tenant A (${changed.join(", ")})`);
        }
    expect(wrong).toEqual([]);
  }, 120_000);

  it("LangGraph checkpoint replace (same id) and delete: only a key with rewrite_thread rewrites what another key wrote", async () => {
    const expected: Record<Who, Outcome> = {
      operator: "deny",
      member_none: "deny",
      member_a: "deny",
      member_org: "deny",
      other_admin: "own",
      webhook: "deny",
      admin: "allow",
    };
    const noteOf = async (thread: string, id: string) => {
      const res = await api(`/v1/langgraph/threads/${thread}/get`, { key: A.adminKey, body: { checkpoint_id: id } });
      const { tuple } = (await res.json()) as { tuple: { metadata: { b: string } } | null };
      return tuple ? atob(tuple.metadata.b) : null;
    };
    const wrong: string[] = [];
    for (const who of PRINCIPALS) {
      const thread = `a-lg-${uid()}`; // the session:a* member reaches it: a denial is for the rewrite, not the reach
      const original = lgPut();
      await made(api(`/v1/langgraph/threads/${thread}/batch`, { key: A.adminKey, body: { ops: [original] } }), 200);
      const replaced = { ...original, metadata: { t: "json", b: b64({ by: who }) } };
      for (const [what, call] of [
        ["replace", { method: "POST", path: `/v1/langgraph/threads/${thread}/batch`, body: { ops: [replaced] } }],
        ["delete", { method: "DELETE", path: `/v1/langgraph/threads/${thread}` }],
      ] as const) {
        const before = await noteOf(thread, original.id);
        const res = await send(who, call);
        const text = await res.text();
        const after = await noteOf(thread, original.id);
        const where = `${what} as ${who} → ${res.status} ${text.slice(0, 120)}`;
        if (expected[who] === "allow") {
          if (res.status < 200 || res.status > 299) wrong.push(`${where}: expected allow`);
        } else if (expected[who] === "own") {
          if (before !== after) wrong.push(`${where}: another tenant changed tenant A`);
        } else {
          if (res.status !== 401 && res.status !== 403) wrong.push(`${where}: expected deny`);
          else if (!/"code":"BEM-0(2[0-5]|90)"/.test(text)) wrong.push(`${where}: denial without its code`);
          if (before !== after) wrong.push(`${where}: a denied call changed the checkpoint`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("GET /v1/threads lists for each key exactly the threads it may read", async () => {
    const list = async (key: string) =>
      ((await (await api("/v1/threads?limit=100", { key })).json()) as { threads: { thread_id: string }[] }).threads.map((t) => t.thread_id).sort();
    expect(await list(keyOf.member_none)).toEqual([]);
    expect(await list(keyOf.member_org)).toEqual([]);
    expect((await list(keyOf.member_a)).every((id) => id.startsWith("a"))).toBe(true);
    expect(await list(keyOf.member_a)).toContain("a-1");
    expect(await list(keyOf.admin)).toContain("ceo");
    expect(await list(keyOf.other_admin)).not.toContain("ceo");
  });
});
