import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countOf } from "../../../src/auth/quotas";
import type { Principal } from "../../../src/core/principal";
import { D1FactsBackend } from "../../../src/memory/d1-facts-backend";
import { MemoryScope } from "../../../src/memory/scope";
import type { AgentState } from "../../../src/pipeline/state";
import { defineTool } from "../../../src/pipeline/tools/define";
import { TOOL_CALLS_AT_ONCE } from "../../../src/pipeline/tools/execute";
import { runToolLoop, type ModelTurn } from "../../../src/pipeline/tools/loop";
import { MEMORY_TOOLS } from "../../../src/pipeline/tools/memory-tools";
import { countingLimiter } from "../../support/counting-limiter";
import { fakeOpenAI } from "../../support/fake-openai";
import { api, createTenant } from "../../support/tenants";
import { assistant, call, stateOf, testRuntime, user } from "../middleware/helpers";

// Issue 36: one model step ran every server tool call at once, each passing the fact quota's count
// before any wrote (quota 20 with 15 held: a step of 40 remembers left 55), the whole step one
// rate-limit unit, and a reply of 500 calls ran all 500 before its save refused it (BEM-035).

/** A model that asks for `calls` in its first reply and then answers. */
const stepOf =
  (calls: ReturnType<typeof call>[]) =>
  async (_s: AgentState, info: { index: number }): Promise<ModelTurn> =>
    info.index === 0 ? assistant(null, calls) : assistant("Done.");

const remembers = (n: number) =>
  Array.from({ length: n }, (_, i) => call(`r${i}`, "remember", JSON.stringify({ scope: "organization:acme", kind: "note", text: `Fact ${i} of the step.` })));

describe("one model step's server tool calls", () => {
  it("hold the fact quota (20, 15 held: a step of 40 remembers leaves 20) and count one request each", async () => {
    const t = await createTenant();
    const facts = new D1FactsBackend(env.DB, t.tenant);
    for (let i = 0; i < 15; i++) await facts.remember(MemoryScope.parse("organization:acme"), "note", `Held ${i}.`);
    const { limiter, counts } = countingLimiter();
    const principal: Principal = { kind: "tenant", tenant: t.tenant, role: "admin", keyId: t.adminKeyId, grants: ["*"] };
    const runtime = testRuntime({
      caller: { env: { ...env, MAX_FACTS_PER_TENANT: "20", RATE_LIMIT_ADMIN: limiter }, principal, scopes: ["organization:acme"] },
    });
    const result = await runToolLoop({ callModel: stepOf(remembers(40)), tools: MEMORY_TOOLS, state: stateOf([user("go")]), runtime, maxSteps: 3 });
    expect(await countOf(env.DB, t.tenant, "facts")).toBe(20);
    const answers = result.state.messages.filter((m) => m.role === "tool");
    expect(answers).toHaveLength(40);
    expect(answers.filter((m) => m.metadata?.error === undefined)).toHaveLength(5);
    expect(answers.filter((m) => String(m.content).includes("(MAX_FACTS_PER_TENANT)"))).toHaveLength(35);
    expect(counts.get(`key:${t.adminKeyId}`)).toBe(40);
  });

  it(`run at most ${TOOL_CALLS_AT_ONCE} at a time`, async () => {
    let running = 0;
    let most = 0;
    const slow = defineTool({
      name: "slow",
      description: "waits",
      inputSchema: { type: "object", properties: {} },
      handler: async () => {
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return "ok";
      },
    });
    const calls = Array.from({ length: 30 }, (_, i) => call(`s${i}`, "slow"));
    const result = await runToolLoop({ callModel: stepOf(calls), tools: [slow], state: stateOf([user("go")]), runtime: testRuntime(), maxSteps: 3 });
    expect(result.state.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(calls.map((c) => c.id));
    expect(most).toBe(TOOL_CALLS_AT_ONCE);
  });

  it("a reply of more than 128 tool calls is 422 BEM-220 before any runs: nothing stored", async () => {
    const t = await createTenant();
    fakeOpenAI().reply({
      tool_calls: Array.from({ length: 129 }, (_, i) => ({
        id: `m${i}`,
        name: "remember",
        arguments: { scope: "organization:acme", kind: "note", text: `Flood ${i}.` },
      })),
    });
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: {
        model: "gpt-4o-mini",
        agent: "memory-assistant",
        thread_id: `flood-${crypto.randomUUID().slice(0, 8)}`,
        messages: [{ role: "user", content: "Store these." }],
      },
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-220");
    expect(await countOf(env.DB, t.tenant, "facts")).toBe(0);
  });
});
