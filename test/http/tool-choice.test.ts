import { describe, expect, it } from "vitest";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/**
 * A tool_choice naming a tool the request does not send, or two tools of one name, went on as sent: the
 * offline model answered as if neither were there, and a provider refused the call (a 502 the SDKs retry)
 * though the mistake was the request's. Each is a coded 400 naming the tool, and nothing is stored.
 */
const tenant = tenantForRuns({ memberScopes: ["session:tc-*"] });
const anthropic = { "anthropic-version": "2023-06-01" };

const chatTool = (name: string) => ({ type: "function", function: { name, parameters: { type: "object", properties: {} } } });
const responsesTool = (name: string) => ({ type: "function", name, parameters: { type: "object", properties: {} } });
const messagesTool = (name: string) => ({ name, input_schema: { type: "object", properties: {} } });

type Wire = { route: string; body: (thread: string, extra: Record<string, unknown>) => Record<string, unknown>; headers?: Record<string, string> };
const WIRES: Record<string, Wire> = {
  chat: { route: "/v1/chat/completions", body: (t, x) => ({ model: "auto", thread_id: t, messages: [{ role: "user", content: "hello" }], ...x }) },
  responses: { route: "/v1/responses", body: (_t, x) => ({ model: "auto", input: "hello", ...x }) },
  messages: {
    route: "/v1/messages",
    body: (t, x) => ({ model: "auto", max_tokens: 50, thread_id: t, messages: [{ role: "user", content: "hello" }], ...x }),
    headers: anthropic,
  },
};

const CASES: Record<string, { unknownChoice: Record<string, unknown>; duplicates: Record<string, unknown>; knownChoice: Record<string, unknown> }> = {
  chat: {
    unknownChoice: { tools: [chatTool("get_weather")], tool_choice: { type: "function", function: { name: "get_wether" } } },
    duplicates: { tools: [chatTool("get_weather"), chatTool("get_weather")] },
    knownChoice: { tools: [chatTool("get_weather")], tool_choice: { type: "function", function: { name: "get_weather" } } },
  },
  responses: {
    unknownChoice: { tools: [responsesTool("get_weather")], tool_choice: { type: "function", name: "get_wether" } },
    duplicates: { tools: [responsesTool("get_weather"), responsesTool("get_weather")] },
    knownChoice: { tools: [responsesTool("get_weather")], tool_choice: { type: "function", name: "get_weather" } },
  },
  messages: {
    unknownChoice: { tools: [messagesTool("get_weather")], tool_choice: { type: "tool", name: "get_wether" } },
    duplicates: { tools: [messagesTool("get_weather"), messagesTool("get_weather")] },
    knownChoice: { tools: [messagesTool("get_weather")], tool_choice: { type: "tool", name: "get_weather" } },
  },
};

async function codeOf(res: Response): Promise<{ status: number; code: string; message: string }> {
  // A run that went ahead answers without `error` (Responses: `error: null`): its status tells.
  const j = (await res.json()) as { error?: { code?: string; bem_code?: string; message: string } | null };
  return { status: res.status, code: j.error?.bem_code ?? j.error?.code ?? "", message: j.error?.message ?? "" };
}

const send = (wire: Wire, thread: string, extra: Record<string, unknown>, headers: Record<string, string> = {}, key = tenant().memberKey) =>
  api(wire.route, { key, body: wire.body(thread, extra), headers: { ...(wire.headers ?? {}), ...headers } });

describe("tool_choice and tool names are checked against the request's tools", () => {
  for (const [name, wire] of Object.entries(WIRES)) {
    const cases = CASES[name]!;
    // Responses start a thread of their own without one named; X-Thread-Id names it, so the test can look.
    const threadHeader = (t: string): Record<string, string> => (name === "responses" ? { "X-Thread-Id": t } : {});

    it(`${name}: a tool_choice naming a tool the request does not send is 400 BEM-011 naming it, nothing stored`, async () => {
      const thread = uniqueThread("tc");
      const e = await codeOf(await send(wire, thread, cases.unknownChoice, threadHeader(thread)));
      expect(e).toMatchObject({ status: 400, code: "BEM-011" });
      expect(e.message).toContain("tool_choice");
      expect(e.message).toContain("get_wether");
      expect(e.message).toContain("get_weather");
      expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
    });

    it(`${name}: two tools of one name are 400 BEM-011 naming it, nothing stored`, async () => {
      const thread = uniqueThread("tc");
      const e = await codeOf(await send(wire, thread, cases.duplicates, threadHeader(thread)));
      expect(e).toMatchObject({ status: 400, code: "BEM-011" });
      expect(e.message).toContain("'get_weather'");
      expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
    });

    it(`${name}: a tool_choice naming a tool it sends still runs (and calls it)`, async () => {
      const thread = uniqueThread("tc");
      const res = await send(wire, thread, cases.knownChoice, threadHeader(thread));
      expect(res.status).toBe(200);
      expect(JSON.stringify(await res.json())).toContain("get_weather");
    });
  }

  it("a tool the run adds itself (an agent's server tool) may be chosen without sending it", async () => {
    const res = await send(WIRES.chat!, uniqueThread("tc"), {
      agent: "planner",
      context: { user_name: "Ada" },
      tool_choice: { type: "function", function: { name: "set_user_name" } },
    });
    expect(res.status).toBe(200);
  });

  it("count_tokens checks the same (its answer would be for a request Anthropic refuses)", async () => {
    const res = await api("/v1/messages/count_tokens", {
      key: tenant().memberKey,
      body: { model: "auto", messages: [{ role: "user", content: "hello" }], ...CASES.messages!.unknownChoice },
      headers: anthropic,
    });
    const j = (await res.json()) as { type: string; error: { type: string; bem_code: string } };
    expect(res.status).toBe(400);
    expect(j).toMatchObject({ type: "error", error: { type: "invalid_request_error", bem_code: "BEM-011" } });
  });

  const forced: Record<string, Record<string, unknown>> = {
    chat: { tool_choice: "required" },
    responses: { tool_choice: "required" },
    messages: { tool_choice: { type: "any" } },
  };
  for (const [name, wire] of Object.entries(WIRES)) {
    const threadHeader = (t: string): Record<string, string> => (name === "responses" ? { "X-Thread-Id": t } : {});
    it(`${name}: a tool_choice forcing a call with no tools (and no agent) is 400 BEM-011, not a text answer; nothing stored`, async () => {
      // Providers are sent no tool_choice without tools: the answer was text, as if the choice had been auto.
      const thread = uniqueThread("tc");
      const e = await codeOf(await send(wire, thread, forced[name]!, threadHeader(thread)));
      expect(e).toMatchObject({ status: 400, code: "BEM-011" });
      expect(e.message).toContain("tool_choice");
      expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
    });
  }

  for (const [name, wire] of Object.entries(WIRES)) {
    const threadHeader = (t: string): Record<string, string> => (name === "responses" ? { "X-Thread-Id": t } : {});
    it(`${name}: a tool_choice forcing a call, no tools sent, naming an agent without tools is 400 BEM-011 naming it; nothing stored`, async () => {
      // Naming an agent was taken for "it brings tools", so `support` (tools: []) answered the forced call as
      // text. The admin key may load support's scopes and the offline model answers, so the run would go ahead.
      const thread = uniqueThread("tc");
      const e = await codeOf(await send(wire, thread, { ...forced[name]!, agent: "support", model: "offline-echo" }, threadHeader(thread), tenant().adminKey));
      expect(e).toMatchObject({ status: 400, code: "BEM-011" });
      expect(e.message).toContain("agent 'support' has no tools");
      expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
    });
  }

  it("a forced tool the request does not send must be the named agent's own (server or middleware tool), else 400 BEM-011", async () => {
    const choose = (tool: string) => ({ type: "function", function: { name: tool } });
    const thread = uniqueThread("tc");
    const admin = tenant().adminKey;
    const e = await codeOf(
      await send(WIRES.chat!, thread, { agent: "memory-assistant", model: "offline-echo", tool_choice: choose("write_todos") }, {}, admin),
    );
    expect(e).toMatchObject({ status: 400, code: "BEM-011" });
    expect(e.message).toContain("'write_todos'");
    expect(e.message).toContain("remember, recall, forget");
    expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
    // The agent's tools, its middleware's write_todos among them, are the run's: forcing them runs.
    const planner = { agent: "planner", model: "offline-echo", context: { user_name: "Ada" } };
    expect((await send(WIRES.chat!, uniqueThread("tc"), { ...planner, tool_choice: "required" }, {}, admin)).status).toBe(200);
    expect((await send(WIRES.chat!, uniqueThread("tc"), { ...planner, tool_choice: choose("write_todos") }, {}, admin)).status).toBe(200);
  });

  it("a forcing tool_choice with tools, and auto or none without them, still run", async () => {
    const withTools = await send(WIRES.chat!, uniqueThread("tc"), { tools: [chatTool("get_weather")], tool_choice: "required" });
    expect(withTools.status).toBe(200);
    expect(JSON.stringify(await withTools.json())).toContain("get_weather");
    for (const choice of ["auto", "none"]) expect((await send(WIRES.chat!, uniqueThread("tc"), { tool_choice: choice })).status).toBe(200);
  });
});
