import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { EMBEDDED_TURNS } from "../../src/embed/embedded";
import { factsEmbedder, knowFactsEmbedder } from "../../src/embed/embedders";
import { D1FactsBackend } from "../../src/memory/d1-facts-backend";
import { embedOlderFacts } from "../../src/memory/fact-vectors";
import { MemoryScope } from "../../src/memory/scope";
import { embedderOf, embedForRun, embedMissing, embedRecallQuery } from "../../src/pipeline/run-embed";
import { TurnIO } from "../../src/pipeline/turn-io";
import { spendGuard } from "../../src/pipeline/spend-guard";
import type { UsageRecord } from "../../src/pipeline/usage";
import { requireAgent } from "../../src/routing/bundled";
import { ThreadStore } from "../../src/thread/thread-store";
import { unique } from "../thread/support";
import { deployed, fakeAi } from "../support/fake-ai";
import { api, createTenant, type TestTenant } from "../support/tenants";

/**
 * Issue 35: a remote embedder's calls (cause `embedding`) are held against the turn's budgets like its model
 * calls: reserved before the call, settled to what the usage row bills; a budget with no room refuses the call
 * before it goes out, and the turn recalls by words with a warning.
 */
const agent = { ...requireAgent("assistant"), embedder: "bge-small" };

async function withThread<T>(fn: (store: ThreadStore) => Promise<T>): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique("embed-budget")));
  return runInDurableObject(stub, async (_live, state) => {
    const store = ThreadStore.of(state.storage, { embedder: EMBEDDED_TURNS });
    store.update({ ops: [{ op: "append", messages: [{ id: "m0", role: "user", content: "The lighthouse keeper repaints the stripes." }] }] }, "update");
    return fn(store);
  });
}

async function tenantBudget(t: TestTenant, limit_usd: number): Promise<string> {
  const res = await api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey, body: { kind: "tenant", limit_usd } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const standing = async (t: TestTenant, id: string) =>
  (await (await api(`/v1/admin/tenants/${t.tenant}/budgets/${id}`, { key: t.adminKey })).json()) as { spent_usd: number; reserved_usd: number };

/** A run's embedding step on `t`'s budgets, with the fake AI binding; what it billed and what went out. */
async function embedUnder(t: TestTenant, query: string) {
  const after: Promise<unknown>[] = [];
  const guard = spendGuard(env, { tenant: t.tenant, keyId: t.adminKeyId }, undefined, (p) => after.push(p));
  const ai = fakeAi();
  const bills: UsageRecord[] = [];
  const io = new TurnIO(env.DB, undefined);
  io.bill = (_tenant, u) => void bills.push(u);
  const rank = { query, recallQuery: query, recall: { share: 0.75, neighbours: 0 } };
  const run = await withThread((store) =>
    embedForRun({ env: deployed(ai), io, thread: { log: store } }, { tenant: t.tenant, agent, rank, facts: false, guard }),
  );
  await Promise.all(after);
  return { run, ai, bills };
}

/** A tenant with a budget of $0.000001, spent whole through its own object. */
async function spentTenant(): Promise<{ t: TestTenant; id: string }> {
  const t = await createTenant();
  const id = await tenantBudget(t, 0.000001);
  const exhaust = spendGuard(env, { tenant: t.tenant, keyId: t.adminKeyId }, undefined, () => undefined);
  (await exhaust.hold(1)).settle(1);
  await expect.poll(async () => (await standing(t, id)).spent_usd).toBe(0.000001);
  return { t, id };
}

afterEach(() => knowFactsEmbedder(embedderOf(env)));

describe("a remote embedder's calls under budgets", () => {
  it("a spent tenant budget: the embedder is not called, the turn recalls by words and says which budget", async () => {
    const { t, id } = await spentTenant();

    const { run, ai, bills } = await embedUnder(t, "lighthouse stripes");
    expect(ai.calls).toEqual([]);
    expect(bills).toEqual([]);
    expect(run.rank.channels).toEqual(["full_text"]);
    expect(run.warning).toContain("recall by meaning was off for this turn (embedder bge-small: Budget");
    expect(run.warning).toContain(id);
    expect(run.warning).toContain("it ran on full-text search");
    expect(await standing(t, id)).toMatchObject({ spent_usd: 0.000001, reserved_usd: 0 });
  });

  it("a budget with room: the call goes out, and the budget is charged exactly what the usage row bills", async () => {
    const t = await createTenant();
    const id = await tenantBudget(t, 1);
    // About 750 tokens at $0.02 per million: 15 micro-USD.
    const query = "lighthouse ".repeat(273);
    const { run, ai, bills } = await embedUnder(t, query);
    expect(run.warning).toBeUndefined();
    expect(ai.calls).toHaveLength(1);
    expect(bills).toHaveLength(1);
    expect(bills[0]!.cost).toBeGreaterThan(0);
    expect(await standing(t, id)).toEqual(expect.objectContaining({ spent_usd: bills[0]!.cost, reserved_usd: 0 }));
  });

  it("inside the thread's object (the fill after a run, a recall outside one) the tenant's and the thread's budgets hold: a spent one stops the call", async () => {
    const { t, id } = await spentTenant();
    const ai = fakeAi();
    const bills: UsageRecord[] = [];
    const filled = await withThread(async (store) => {
      store.vectors.use(embedderOf(deployed(ai), "bge-small").turns);
      const guard = spendGuard(env, { tenant: t.tenant, keyId: "" }, undefined, () => undefined);
      await embedRecallQuery(store, { query: "lighthouse stripes", share: 0.75, neighbours: 0 }, (u) => bills.push(u), guard);
      return embedMissing(store, (u) => bills.push(u), guard);
    });
    expect(filled).toBe(0);
    expect(ai.calls).toEqual([]);
    expect(bills).toEqual([]);
    expect(await standing(t, id)).toMatchObject({ spent_usd: 0.000001, reserved_usd: 0 });
  });

  it("facts: the scheduled fill holds each tenant against its budgets (a spent one is left, another embedded), and so does a search in a run", async () => {
    const spent = await spentTenant();
    const fresh = await createTenant();
    const ai = fakeAi();
    knowFactsEmbedder(embedderOf(deployed(ai), "bge-small"));
    const scope = MemoryScope.new("organization", unique("o"));
    const spentStore = new D1FactsBackend(env.DB, spent.t.tenant);
    await spentStore.remember(scope, "note", "The spent tenant's lighthouse is red.");
    await new D1FactsBackend(env.DB, fresh.tenant).remember(scope, "note", "The fresh tenant's lighthouse is blue.");
    const holderFor = (tenant: string) => spendGuard(env, { tenant, keyId: "" }, undefined, () => undefined);
    const vecBy = async (tenant: string) =>
      (await env.DB.prepare("SELECT vec_by FROM facts WHERE tenant_id = ?").bind(tenant).first<{ vec_by: string | null }>())?.vec_by;
    for (let i = 0; i < 10 && (await vecBy(fresh.tenant)) === null; i++) await embedOlderFacts(env.DB, factsEmbedder(), holderFor, 64, 1);
    expect(await vecBy(fresh.tenant)).toBe(factsEmbedder().turns.id);
    expect(await vecBy(spent.t.tenant)).toBeNull();
    const sent = () => ai.calls.flatMap((c) => c.text);
    expect(sent()).not.toContain("The spent tenant's lighthouse is red.");

    // A memory tool's search by meaning in a run holds its query's call against the run's budgets.
    const inRun = new D1FactsBackend(env.DB, spent.t.tenant, Date.now, undefined, holderFor(spent.t.tenant));
    await inRun.loadLayer(scope, { facts: 60, rank: { query: "which colour is the lighthouse", channels: ["dense"] } });
    expect(sent()).not.toContain("which colour is the lighthouse");
    expect(await standing(spent.t, spent.id)).toMatchObject({ spent_usd: 0.000001, reserved_usd: 0 });
  });
});
