import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { readSse, tenantForRuns, uniqueThread } from "../support/runs";

const tenant = tenantForRuns();

type Routing = {
  model: string;
  reason: string;
  candidate_count: number;
  attempts: { model: string; outcome: string }[];
  candidates?: string[];
  trace?: { strategy: string }[];
};
type ChatBody = { edgeweave: { routing: Routing; usage_estimated: boolean; warnings: string[] } };

const chat = (thread: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  api("/v1/chat/completions", {
    key: tenant().adminKey,
    headers,
    body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: "hi" }], ...extra },
  });

const STRATEGIES = ["availability", "modality", "capability", "context_window", "cost_aware", "fallback"];

describe("routing in run responses: a compact summary by default, the full trace on request", () => {
  it("by default: model, reason, how many candidates and the attempts; no trace, a few hundred bytes", async () => {
    const res = await chat(uniqueThread());
    expect(res.status).toBe(200);
    const routing = ((await res.json()) as ChatBody).edgeweave.routing;
    expect(Object.keys(routing).sort()).toEqual(["attempts", "candidate_count", "model", "reason"]);
    expect(routing.candidate_count).toBeGreaterThan(1);
    expect(routing.attempts).toEqual([{ model: routing.model, outcome: "ok" }]);
    expect(JSON.stringify(routing).length).toBeLessThan(400);
  });

  it("X-Edgeweave-Trace: full adds the failover order and every strategy's step", async () => {
    const res = await chat(uniqueThread(), {}, { "x-edgeweave-trace": "full" });
    expect(res.status).toBe(200);
    const routing = ((await res.json()) as ChatBody).edgeweave.routing;
    expect(routing.candidates?.[0]).toBe(routing.model);
    expect(routing.candidates).toHaveLength(routing.candidate_count);
    expect(routing.trace?.map((t) => t.strategy)).toEqual(STRATEGIES);
  });

  it('"trace": "full" in the body does the same, on /v1/invoke and in a stream\'s last event', async () => {
    fakeOpenAI().reply("hello");
    const invoke = await api("/v1/invoke", {
      key: tenant().adminKey,
      body: { agent_name: "assistant", session_id: uniqueThread(), content: [{ type: "text", text: "hi" }], model_override: "gpt-4o-mini", trace: "full" },
    });
    expect(invoke.status).toBe(200);
    expect(((await invoke.json()) as { routing: Routing }).routing.trace?.length).toBeGreaterThan(0);

    const stream = await chat(uniqueThread(), { stream: true, trace: "full" });
    const events = await readSse(stream);
    const finish = JSON.parse(events.at(-2)!.data) as ChatBody;
    expect(finish.edgeweave.routing.trace?.map((t) => t.strategy)).toEqual(STRATEGIES);
  });

  it("a checkpoint stores the compact summary, the scopes the run loaded and its memory report, never the trace", async () => {
    const thread = uniqueThread();
    const fact = await api("/v1/memory/facts", {
      key: tenant().adminKey,
      body: { scope: "organization:acme", kind: "style", text: `Answer in one line (${thread}).` },
    });
    const factId = ((await fact.json()) as { id: string }).id;
    const res = await chat(thread, { agent: "assistant" }, { "x-edgeweave-trace": "full" });
    expect(res.status).toBe(200);
    const answered = ((await res.json()) as { edgeweave: { memory: unknown } }).edgeweave.memory;
    const state = (await (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).json()) as {
      channels: { last_route: Routing & { memory_scopes: string[]; memory: { facts: { id: string; reason: string; loaded: boolean }[] } } };
    };
    const stored = state.channels.last_route;
    expect(Object.keys(stored).sort()).toEqual(["attempts", "candidate_count", "memory", "memory_scopes", "model", "reason"]);
    expect(stored.memory_scopes).toContain(`session:${thread}`);
    expect(stored.memory).toEqual(answered);
    expect(stored.memory.facts).toContainEqual(expect.objectContaining({ id: factId, reason: "fits", loaded: true }));
  });

  it("an unknown trace level is a coded 400, nothing run", async () => {
    const header = await chat(uniqueThread(), {}, { "x-edgeweave-trace": "everything" });
    expect(header.status).toBe(400);
    expect(((await header.json()) as { error: { code: string } }).error.code).toBe("BEM-011");
    const body = await chat(uniqueThread(), { trace: "verbose" });
    expect(body.status).toBe(400);
  });

  it("POST /v1/route always returns the full trace", async () => {
    const res = await api("/v1/route", { key: tenant().adminKey, body: { model: "auto", messages: [{ role: "user", content: "hi" }] } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { candidates: string[]; trace: { strategy: string }[] };
    expect(body.trace.map((t) => t.strategy)).toEqual(STRATEGIES);
  });
});
