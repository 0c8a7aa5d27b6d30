import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { budgetRows, budgetSummary } from "../../src/ui/budgets";
import { checkpointView, decodeTyped } from "../../src/ui/langgraph";
import { reportRows, reportSummary } from "../../src/ui/memory-report";
import type { LangGraphTuple, StoredMemoryReport, Usage } from "../../src/ui/types";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant } from "../support/tenants";
import { mockUpstream } from "../support/upstream";
import { saverFor } from "../langgraph/support";

// The inspector's pure view code (src/ui), fed what the API really answers. The page itself is
// driven in Chromium by test/e2e/inspector.e2e.ts.

describe("the inspector's LangGraph view (read-only, from the checkpointer's list route)", () => {
  it("shows namespaces, ids, parents, metadata, channel versions and pending writes of checkpoints the real saver stored", async () => {
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const thread = `lg-view-${uuid6(-1).slice(0, 8)}`;
    const first = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { n: 1 }, channel_versions: { n: 1 } };
    const c1 = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, first, { source: "input", step: -1, parents: {} }, { n: 1 });
    const second = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { n: 2 }, channel_versions: { n: 2 } };
    const c2 = await saver.put(c1, second, { source: "loop", step: 0, parents: {} }, { n: 2 });
    await saver.putWrites(c2, [["n", 3]], "task-7");
    const sub = { ...emptyCheckpoint(), id: uuid6(-1) };
    await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "child:1" } }, sub, { source: "input", step: -1, parents: { "": second.id } }, {});

    const res = await api(`/v1/langgraph/threads/${thread}/list`, { key: t.adminKey, body: { limit: 20 } });
    expect(res.status).toBe(200);
    const { tuples } = (await res.json()) as { tuples: LangGraphTuple[] };
    const views = tuples.map(checkpointView);
    expect(views.map((v) => [v.ns, v.id])).toEqual([
      ["child:1", sub.id],
      ["(root)", second.id],
      ["(root)", first.id],
    ]);
    const head = views[1]!;
    expect(head).toMatchObject({ parent: first.id, step: "0", source: "loop", channelVersions: [["n", "2"]], channels: ["n"] });
    expect(head.pendingWrites).toEqual([{ task: "task-7", channel: "n", value: 3 }]);
    expect(head.metadata).toMatchObject({ source: "loop", step: 0 });
    expect(head.ts).toBe(second.ts);
    expect(views[2]!.parent).toBeNull();
    expect(views[0]!.metadata).toMatchObject({ parents: { "": second.id } });
  });

  it("names a non-JSON value by type and size instead of decoding it", () => {
    expect(decodeTyped({ t: "bytes", b: btoa("\u0000\u0001\u0002") })).toBe("<bytes, 3 bytes>");
    expect(decodeTyped({ t: "json", b: btoa("not json") })).toBe("not json");
    expect(decodeTyped({ t: "json", b: btoa(JSON.stringify({ a: [1] })) })).toEqual({ a: [1] });
  });
});

describe("the inspector's memory report of the last run", () => {
  const report: StoredMemoryReport = {
    facts: [
      { id: "f-always", scope: "organization:acme", kind: "policy", key: null, tokens: 12, loaded: true, reason: "always" },
      { id: "f-rel", scope: "organization:acme", kind: "travel", key: "lisbon", tokens: 15, loaded: true, reason: "relevant", score: 2.34567 },
      { id: "f-new", scope: "organization:acme", kind: "note", key: null, tokens: 20, loaded: true, reason: "recent" },
      { id: "f-big", scope: "organization:acme", kind: "note", key: null, tokens: 900, loaded: false, reason: "didn't fit" },
    ],
    dropped_facts: 118,
    facts_omitted: 3,
  };

  it("says why each fact was loaded or left out, with the BM25 score of a relevant one", () => {
    const rows = reportRows(report);
    expect(rows.map((r) => [r.id, r.loaded, r.why])).toEqual([
      ["f-always", true, "always (a kind the agent always loads)"],
      ["f-rel", true, "relevant (BM25 score 2.346)"],
      ["f-new", true, "recent (newest after the relevant)"],
      ["f-big", false, "didn't fit"],
    ]);
    expect(rows[1]!.key).toBe("lisbon");
    expect(reportSummary(report)).toBe("3 fact(s) loaded, 47 token(s); 118 left out; 3 more entries not stored");
  });

  it("says how many entries are from scopes the reading key cannot read (the API leaves them out, counted)", () => {
    expect(reportSummary({ ...report, facts_hidden: 2 })).toBe(
      "3 fact(s) loaded, 47 token(s); 118 left out; 3 more entries not stored; 2 entries from scopes this key cannot read",
    );
  });

  it("lists the earlier turns recall brought like facts: message id, tokens, score and why", () => {
    const withTurns: StoredMemoryReport = {
      ...report,
      recalled: [
        { id: "m-7", tokens: 30, reason: "match", score: 4.5 },
        { id: "m-8", tokens: 22, reason: "neighbour", score: 4.5 },
      ],
    };
    expect(reportRows(withTurns).slice(-2)).toEqual([
      { id: "m-7", scope: "session", kind: "earlier turn", key: "", tokens: 30, loaded: true, why: "recalled (BM25 score 4.500)" },
      { id: "m-8", scope: "session", kind: "earlier turn", key: "", tokens: 22, loaded: true, why: "recalled next to a match (score 4.500)" },
    ]);
    expect(reportSummary(withTurns)).toBe("3 fact(s) loaded, 47 token(s); 118 left out; 3 more entries not stored; 2 earlier turn(s) recalled");
  });

  it("a match found by words and meaning shows each channel's rank and score beside the fused score", () => {
    const fused: StoredMemoryReport = {
      ...report,
      recalled: [
        { id: "m-7", tokens: 30, reason: "match", score: 1.25, channels: { full_text: { rank: 2, score: 3.1 }, dense: { rank: 5, score: 0.4123 } } },
        { id: "m-9", tokens: 12, reason: "match", score: 0.4, channels: { dense: { rank: 1, score: 0.61 } } },
      ],
    };
    expect(
      reportRows(fused)
        .slice(-2)
        .map((r) => r.why),
    ).toEqual(["recalled (score 1.250; words #2, BM25 3.100; meaning #5, cosine 0.412)", "recalled (score 0.400; meaning #1, cosine 0.610)"]);
  });

  it("a run's stored report reads back through the thread state as the run answered it", async () => {
    const t = await createTenant();
    const thread = `mem-view-${uuid6(-1).slice(0, 8)}`;
    await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "style", text: "Answer briefly." } });
    const run = await api("/v1/invoke", {
      key: t.adminKey,
      body: { agent_name: "assistant", session_id: thread, content: [{ type: "text", text: "hello" }], model_override: "offline-echo" },
    });
    expect(run.status).toBe(200);
    const answered = ((await run.json()) as { memory: StoredMemoryReport }).memory;
    const state = (await (await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).json()) as {
      channels: { last_route: { memory: StoredMemoryReport } };
    };
    expect(reportRows(state.channels.last_route.memory)).toEqual(reportRows(answered));
    expect(reportRows(answered)).toContainEqual(expect.objectContaining({ kind: "style", loaded: true, why: "fits (the whole scope fit its share)" }));
  });
});

describe("the inspector's budgets tab (read-only, from GET /v1/usage)", () => {
  it("an admin sees every budget of its tenant; a member only the tenant's and its own key's, each with its window, spend, hold and thresholds", async () => {
    const t = await createTenant();
    mockUpstream("https://alerts.example", () => new Response(null, { status: 204 }));
    const make = async (body: Record<string, unknown>) => {
      const res = await api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey, body });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const tenantBudget = await make({
      kind: "tenant",
      limit_usd: 0.003,
      window: "day",
      time_zone: "Europe/Lisbon",
      name: "team",
      thresholds: [1, 0.5],
      alert_url: "https://alerts.example/budget",
    });
    const keyBudget = await make({ kind: "key", target: t.memberKeyId, limit_usd: 0.0015 });
    const threadBudget = await make({ kind: "thread", target: "th-budget-view", limit_usd: 5, window: "month" });
    // gpt-4o-mini at 1,000 + 1,000 tokens: 750 micro-USD a call; two calls spend the key budget and half the tenant's.
    fakeOpenAI().otherwise({ text: "ok", usage: { prompt_tokens: 1000, completion_tokens: 1000 } });
    for (let i = 0; i < 2; i++) {
      const res = await api("/v1/chat/completions", {
        key: t.memberKey,
        body: { model: "gpt-4o-mini", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] },
      });
      expect(res.status).toBe(200);
    }
    const usage = async (key: string) => {
      const res = await api("/v1/usage", { key });
      expect(res.status).toBe(200);
      return ((await res.json()) as Usage).budgets;
    };

    const all = await usage(t.adminKey);
    const rows = budgetRows(all);
    expect(rows.map((r) => r.id)).toEqual([tenantBudget, keyBudget, threadBudget]);
    const [team, member, thread] = rows;
    expect(team).toMatchObject({ over: "tenant (team)", limit: "$0.0030", spent: "$0.0015", held: "$0.00", left: "$0.0015", exhausted: false });
    expect(team!.window).toMatch(/^day, from \d{4}-\d\d-\d\dT[\d:.]+Z \(Europe\/Lisbon\)$/);
    expect(team!.resets).toBe(all[0]!.resets_at);
    expect(Date.parse(team!.resets)).toBeGreaterThan(Date.now());
    const reached = all[0]!.thresholds_reached[0]!;
    expect(team!.thresholds).toBe(`50% reached ${reached.at} ($0.0015); 100% not reached`);
    expect(member).toMatchObject({ over: `key ${t.memberKeyId}`, limit: "$0.0015", spent: "$0.0015", left: "$0.00", exhausted: true });
    expect(member!.window).toBe("none (never resets)");
    expect(member!.resets).toBe("never");
    expect(member!.thresholds).toBe("none set");
    expect(thread).toMatchObject({ over: "thread th-budget-view", limit: "$5.00", spent: "$0.00", exhausted: false });
    expect(budgetSummary(all)).toBe("3 budget(s), 1 with nothing left (spent or held): calls under them are refused (402) until they reset.");

    // The member key: the access policy's view, not the tenant's (no thread budget).
    const mine = await usage(t.memberKey);
    expect(budgetRows(mine).map((r) => r.id)).toEqual([tenantBudget, keyBudget]);
    // A tenant without budgets says so.
    const empty = await createTenant();
    expect(budgetRows(await usage(empty.adminKey))).toEqual([]);
    expect(budgetSummary(await usage(empty.memberKey))).toMatch(/^No spend budget applies to this key/);
  });
});
