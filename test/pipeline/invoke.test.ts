import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { settleBookkeeping } from "../support/bookkeeping";
import { api, createTenant } from "../support/tenants";
import { readSse, tenantForRuns, uniqueThread } from "../support/runs";

const tenant = tenantForRuns({ memberScopes: ["organization:acme", "session:*"] });

type InvokeBody = {
  session_id: string;
  checkpoint_id: string;
  message: { role: string; content: string };
  model: string;
  routing: { model: string; reason: string; candidates: string[] };
  usage: { prompt_tokens: number; completion_tokens: number; cost: number; estimated: boolean };
};

describe("POST /v1/invoke (the seed's native shape)", () => {
  it("runs a turn on the named model and reports routing, usage and cost", async () => {
    const fake = fakeAnthropic().reply({ text: "Release notes drafted.", usage: { prompt_tokens: 1000, completion_tokens: 200 } });
    const session = uniqueThread("s");
    // The admin key: "assistant" trims the stored history, which members may not do.
    const res = await api("/v1/invoke", {
      key: tenant().adminKey,
      body: { agent_name: "assistant", session_id: session, content: [{ type: "text", text: "Draft the release notes" }], model_override: "claude-3-5-haiku" },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as InvokeBody;
    expect(body.session_id).toBe(session);
    expect(body.message).toEqual({ role: "assistant", content: "Release notes drafted." });
    expect(body.model).toBe("claude-3-5-haiku");
    expect(body.routing.model).toBe("claude-3-5-haiku");
    // Input and output at their own prices (models.yaml: 0.0008 and 0.004 per 1k).
    expect(body.usage).toEqual({ prompt_tokens: 1000, completion_tokens: 200, cost: (1000 * 0.0008 + 200 * 0.004) / 1000, estimated: false });
    // Anthropic wire: the agent prompt is split out into `system`.
    expect(fake.last.url).toBe("https://api.anthropic.com/v1/messages");
    expect(typeof fake.last.body.system === "string" ? fake.last.body.system : JSON.stringify(fake.last.body.system)).toContain("helpful, concise assistant");
    expect(fake.last.body.model).toBe("claude-3-5-haiku-20241022");
  });

  it("rejects client-named scopes outside the key's grants with BEM-023 and calls no model", async () => {
    const fake = fakeAnthropic();
    const res = await api("/v1/invoke", {
      key: tenant().memberKey,
      body: {
        agent_name: "planner",
        context: { user_name: "Ada" },
        session_id: uniqueThread("s"),
        content: [{ type: "text", text: "hi" }],
        metadata: { memory_scopes: [{ name: "organization", id: "other-org" }] },
        model_override: "claude-3-5-haiku",
      },
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-023");
    expect(fake.calls).toHaveLength(0);
  });

  it("a field the native shape does not have is 400 BEM-011 naming it, not ignored: a misplaced memory_scopes is never silently dropped", async () => {
    const fake = fakeAnthropic();
    const base = { agent_name: "assistant", content: [{ type: "text", text: "hi" }] };
    const misplaced: [string, Record<string, unknown>][] = [
      // The chat spellings, which this shape nests or names otherwise: each was dropped and the turn ran without it.
      ["memory_scopes", { memory_scopes: [{ name: "organization", id: "other-org" }] }],
      ["model", { model: "claude-3-5-haiku" }],
      ["capabilities", { capabilities: ["vision"] }],
      ["memory_scope", { metadata: { memory_scope: ["organization:other-org"] } }],
    ];
    for (const [field, extra] of misplaced) {
      const session = uniqueThread("s");
      const res = await api("/v1/invoke", { key: tenant().memberKey, body: { ...base, session_id: session, ...extra } });
      expect(res.status, field).toBe(400);
      const error = ((await res.json()) as { error: { code: string; message: string } }).error;
      expect(error.code, field).toBe("BEM-011");
      expect(error.message, field).toContain(field);
      expect((await api(`/v1/threads/${session}/state`, { key: tenant().adminKey })).status, field).toBe(404);
    }
    expect(fake.calls).toHaveLength(0);
  });

  it("streams delta events then done with the same summary", async () => {
    fakeAnthropic().reply({ text: "streamed native", chunks: ["streamed ", "native"] });
    const res = await api("/v1/invoke", {
      key: tenant().adminKey,
      body: {
        agent_name: "assistant",
        session_id: uniqueThread("s"),
        content: [{ type: "text", text: "go" }],
        model_override: "claude-3-5-haiku",
        stream: true,
      },
    });
    const events = await readSse(res);
    const deltas = events.filter((e) => e.event === "delta").map((e) => (JSON.parse(e.data) as { content: string }).content);
    expect(deltas.join("")).toBe("streamed native");
    const done = events.find((e) => e.event === "done");
    expect(done).toBeDefined();
    const summary = JSON.parse(done!.data) as InvokeBody;
    expect(summary.message.content).toBe("streamed native");
    expect(summary.model).toBe("claude-3-5-haiku");
  });

  it("a bad session id is BEM-030, as on the thread routes", async () => {
    const res = await api("/v1/invoke", {
      key: tenant().adminKey,
      body: { agent_name: "assistant", session_id: "no spaces/allowed", content: [{ type: "text", text: "x" }] },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-030");
  });

  it("unknown agent is a coded 404", async () => {
    const res = await api("/v1/invoke", { key: tenant().adminKey, body: { agent_name: "nobody", session_id: "s1", content: [{ type: "text", text: "x" }] } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-047");
  });

  it("the offline echo model answers with no network and shows the memory it was given", async () => {
    const session = uniqueThread("s");
    await api("/v1/memory/facts", { key: tenant().adminKey, body: { scope: "organization:acme", kind: "style", text: "Use short sentences." } });
    const turn = (text: string) =>
      api("/v1/invoke", { key: tenant().adminKey, body: { agent_name: "assistant", session_id: session, content: [{ type: "text", text }] } });
    const first = (await (await turn("My name is Ada.")).json()) as InvokeBody;
    expect(first.model).toBe("offline-echo");
    const second = (await (await turn("What is my name?")).json()) as InvokeBody;
    expect(second.message.content).toContain("What is my name?");
    expect(second.message.content).toContain("[style organization:acme] Use short sentences.");
    expect(second.message.content).toContain("My name is Ada.");
  });

  it("records usage per tenant and day", async () => {
    fakeAnthropic().reply({ text: "x", usage: { prompt_tokens: 10, completion_tokens: 4 } });
    const before = (await (await api("/v1/usage", { key: tenant().adminKey })).json()) as { total: { requests: number; prompt_tokens: number } };
    const session = uniqueThread("s");
    await api("/v1/invoke", {
      key: tenant().adminKey,
      body: { agent_name: "assistant", session_id: session, content: [{ type: "text", text: "x" }], model_override: "claude-3-5-haiku" },
    });
    // The thread's object sends the usage as the answer leaves: wait for that send, not for a clock.
    await settleBookkeeping(tenant().tenant, [session]);
    const after = (await (await api("/v1/usage", { key: tenant().adminKey })).json()) as { total: { requests: number; prompt_tokens: number } };
    expect(after.total.requests).toBe(before.total.requests + 1);
    expect(after.total.prompt_tokens).toBe(before.total.prompt_tokens + 10);
    const other = await createTenant();
    const theirs = (await (await api("/v1/usage", { key: other.adminKey })).json()) as { total: { requests: number } };
    expect(theirs.total.requests).toBe(0);
  });
});
