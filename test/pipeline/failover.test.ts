import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { clearUpstream } from "../support/upstream";
import { readSse, snapshot, tenantForRuns, uniqueThread } from "../support/runs";

const tenant = tenantForRuns();

type Routing = { model: string; candidates: string[]; attempts: { model: string; outcome: string; status?: number; delay_ms?: number }[] };
// capabilities ["json"] routes to gpt-4o-mini, then gpt-4o (cheapest first), both served by the OpenAI fake.
const jsonTurn = (thread: string, content: string, extra: Record<string, unknown> = {}) => ({
  model: "auto",
  capabilities: ["json"],
  messages: [{ role: "user", content }],
  thread_id: thread,
  ...extra,
});

describe("failover across routed candidates", () => {
  it("500 twice on the first candidate, then success on the next; the trace names every attempt", async () => {
    const fake = fakeOpenAI().status(500).status(500).reply("from the second model");
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, headers: { "x-edgeweave-trace": "full" }, body: jsonTurn(uniqueThread(), "hi") });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string; choices: { message: { content: string } }[]; edgeweave: { routing: Routing } };
    expect(body.choices[0]!.message.content).toBe("from the second model");
    expect(body.model).toBe("gpt-4o");
    expect(body.edgeweave.routing.candidates.slice(0, 2)).toEqual(["gpt-4o-mini", "gpt-4o"]);
    expect(body.edgeweave.routing.attempts.map((a) => `${a.model}:${a.outcome}:${a.status ?? ""}`)).toEqual([
      "gpt-4o-mini:retry:500",
      "gpt-4o-mini:failover:500",
      "gpt-4o:ok:",
    ]);
    expect(fake.calls.map((c) => (c.body as { model: string }).model)).toEqual(["gpt-4o-mini", "gpt-4o-mini", "gpt-4o"]);
    expect(res.headers.get("x-edgeweave-model")).toBe("gpt-4o");
  });

  it("429 with retry-after: waits as asked, then the same model answers", async () => {
    const fake = fakeOpenAI().status(429, { retryAfter: 1 }).reply("after the wait");
    const started = Date.now();
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: jsonTurn(uniqueThread(), "hi") });
    const body = (await res.json()) as { model: string; edgeweave: { routing: Routing } };
    expect(res.status).toBe(200);
    expect(body.model).toBe("gpt-4o-mini");
    expect(body.edgeweave.routing.attempts[0]).toMatchObject({ outcome: "retry", status: 429, delay_ms: 1000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(fake.calls).toHaveLength(2);
  });

  it("every candidate failing leaves the thread exactly as it was", async () => {
    const thread = uniqueThread();
    fakeOpenAI().reply("kept");
    await api("/v1/chat/completions", { key: tenant().adminKey, body: jsonTurn(thread, "first") });
    const before = await snapshot(tenant().adminKey, thread);
    clearUpstream();
    fakeOpenAI().otherwise({ text: "never" }).status(503).status(503).status(503).status(503).status(503).status(503);
    // The fallback reply would answer a 7th call; give it none by asking for a model list of two.
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: jsonTurn(thread, "second", { capabilities: ["json", "tools"] }) });
    const after = await snapshot(tenant().adminKey, thread);
    if (res.status === 200) {
      // Only possible if more candidates than scripted failures existed; then a reply was saved.
      throw new Error(`expected every candidate to fail, got 200: ${await res.text()}`);
    }
    expect(res.status).toBe(502);
    expect(after).toEqual(before);
  });

  it("a stream cut mid-way ends with an error event, never [DONE], and saves nothing", async () => {
    const thread = uniqueThread();
    fakeOpenAI().reply("kept");
    await api("/v1/chat/completions", { key: tenant().adminKey, body: jsonTurn(thread, "first") });
    const before = await snapshot(tenant().adminKey, thread);
    clearUpstream();
    fakeOpenAI().cut({ text: "half an ans", chunks: ["half ", "an ans"] });
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: jsonTurn(thread, "second", { stream: true }) });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    const data = events.map((e) => e.data);
    expect(data).not.toContain("[DONE]");
    const last = JSON.parse(data[data.length - 1]!) as { error?: { code: string } };
    expect(last.error?.code).toBe("BEM-074");
    expect(data.some((d) => d.includes("half "))).toBe(true);
    expect(await snapshot(tenant().adminKey, thread)).toEqual(before);
  });

  it("an error before the first streamed byte fails over, and the client sees a clean stream", async () => {
    fakeOpenAI()
      .status(500)
      .status(500)
      .reply({ text: "second model streams", chunks: ["second ", "model streams"] });
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: jsonTurn(uniqueThread(), "x", { stream: true }) });
    expect(res.headers.get("x-edgeweave-model")).toBe("gpt-4o");
    const data = (await readSse(res)).map((e) => e.data);
    expect(data[data.length - 1]).toBe("[DONE]");
    // The finishing chunk names the model, the reason and every attempt, even without include_usage.
    const finish = JSON.parse(data[data.length - 2]!) as {
      choices: { finish_reason: string }[];
      edgeweave: { routing: { model: string; reason: string; attempts: { outcome: string }[] } };
    };
    expect(finish.choices[0]!.finish_reason).toBe("stop");
    expect(finish.edgeweave.routing.model).toBe("gpt-4o");
    expect(finish.edgeweave.routing.reason).toContain("gpt-4o-mini");
    expect(finish.edgeweave.routing.attempts.map((a) => a.outcome)).toEqual(["retry", "failover", "ok"]);
    const text = data
      .slice(0, -2)
      .map((d) => (JSON.parse(d) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "")
      .join("");
    expect(text).toBe("second model streams");
  });
});
