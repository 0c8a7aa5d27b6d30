import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOllama } from "../support/fake-ollama";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns, uniqueThread } from "../support/runs";

/**
 * OpenAI request fields that were accepted and did nothing: chat's reasoning_effort, logit_bias,
 * prediction, store, metadata, modalities/audio; Responses' reasoning, background, truncation,
 * max_tool_calls, text.verbosity, service_tier, prompt_cache_key, safety_identifier. Each now
 * reaches the model, is mapped (Anthropic thinking), is named in the warnings, or is 400 BEM-011.
 */
const tenant = tenantForRuns();

type Err = { error: { code: string; message: string } };
type Run = { edgeweave: { warnings: string[] } };

const post = (path: string, body: Record<string, unknown>) => api(path, { key: tenant().adminKey, body });
const ok = async (path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> => {
  const res = await post(path, body);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Record<string, unknown>;
};
const refused = async (path: string, body: Record<string, unknown>, field: string, code = "BEM-011") => {
  const res = await post(path, body);
  expect(res.status, `${path} ${JSON.stringify(body).slice(0, 200)}`).toBe(400);
  const err = ((await res.json()) as Err).error;
  expect(err.code).toBe(code);
  expect(err.message).toContain(field);
};

const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: "user", content: "hi" }], ...extra });
const OPENAI_CHAT = {
  logit_bias: { "50256": -100 },
  prediction: { type: "content", content: "the predicted text" },
  reasoning_effort: "low",
  verbosity: "low",
  service_tier: "flex",
  prompt_cache_key: "cache-1",
  prompt_cache_retention: "24h",
  safety_identifier: "user-hash-1",
};

describe("chat: OpenAI's other request fields", () => {
  it("reach an OpenAI-compatible model as sent", async () => {
    const fake = fakeOpenAI().reply("ok");
    await ok("/v1/chat/completions", chat("gpt-4o-mini", OPENAI_CHAT));
    expect(fake.last.body).toMatchObject(OPENAI_CHAT);
  });

  it("at an Anthropic model that reasons: reasoning_effort is a thinking budget, safety_identifier its user id, the rest named", async () => {
    const fake = fakeAnthropic().reply("thought");
    const body = (await ok("/v1/chat/completions", chat("claude-sonnet-4", OPENAI_CHAT))) as Run;
    const sent = fake.last.body as { thinking?: { budget_tokens: number }; max_tokens: number; metadata?: unknown };
    expect(sent.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect(sent.max_tokens).toBeGreaterThan(2048);
    expect(sent.metadata).toEqual({ user_id: "user-hash-1" });
    const warned = body.edgeweave.warnings.join("\n");
    for (const f of ["logit_bias", "prediction", "verbosity", "service_tier", "prompt_cache_key", "prompt_cache_retention"]) expect(warned).toContain(f);
    expect(warned).not.toContain("reasoning_effort");
    expect(warned).not.toContain("safety_identifier");
  });

  it("at an Anthropic model that does not reason, or Ollama, reasoning_effort is named in the warnings", async () => {
    fakeAnthropic().reply("plain");
    const haiku = (await ok("/v1/chat/completions", chat("claude-3-5-haiku", { reasoning_effort: "high" }))) as Run;
    expect(haiku.edgeweave.warnings.join("\n")).toContain("reasoning_effort");
    const ollama = fakeOllama().reply("local");
    const local = (await ok("/v1/chat/completions", chat("llama3.2", { reasoning_effort: "high", logit_bias: { "1": 5 } }))) as Run;
    expect(local.edgeweave.warnings.join("\n")).toContain("logit_bias, reasoning_effort");
    expect(ollama.last.body).not.toHaveProperty("logit_bias");
  });

  it("out of OpenAI's ranges is 400 BEM-011 naming the field", async () => {
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { logit_bias: { "50256": 101 } }), "logit_bias");
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { reasoning_effort: "extreme" }), "reasoning_effort");
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { service_tier: "gold" }), "service_tier");
  });

  it("what is not kept or produced here is refused: store true, metadata, audio output, store false on a thread", async () => {
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { store: true }), "store");
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { metadata: { k: "v" } }), "metadata");
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { modalities: ["text", "audio"] }), "modalities");
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { audio: { voice: "alloy", format: "wav" } }), "audio");
    await refused("/v1/chat/completions", chat("gpt-4o-mini", { store: false, thread_id: uniqueThread() }), "store");
    fakeOpenAI().reply("fine");
    await ok("/v1/chat/completions", chat("gpt-4o-mini", { store: false, modalities: ["text"], metadata: null, audio: null }));
  });
});

const responses = (model: string, extra: Record<string, unknown> = {}) => ({ model, input: "hi", store: false, ...extra });

describe("responses: OpenAI's other request fields", () => {
  it("reasoning.effort, text.verbosity, service_tier, prompt_cache_key, safety_identifier reach the model and are echoed", async () => {
    const fake = fakeOpenAI().reply("ok");
    const shared = { service_tier: "priority", prompt_cache_key: "k1", prompt_cache_retention: "in-memory", safety_identifier: "u1" };
    const extra = { reasoning: { effort: "high" }, text: { verbosity: "high" }, metadata: { ticket: "42" }, ...shared };
    const body = await ok("/v1/responses", responses("gpt-4o-mini", extra));
    expect(fake.last.body).toMatchObject({ reasoning_effort: "high", verbosity: "high", ...shared });
    // A stored response keeps its metadata too; this one is not stored, so its answer is the echo.
    expect(body).toMatchObject({ ...extra, truncation: "auto" });
  });

  it("reasoning.effort is a thinking budget at an Anthropic model that reasons", async () => {
    const fake = fakeAnthropic().reply("thought");
    await ok("/v1/responses", responses("claude-sonnet-4", { reasoning: { effort: "medium" }, max_output_tokens: 20_000 }));
    expect(fake.last.body).toMatchObject({ thinking: { type: "enabled", budget_tokens: 8192 }, max_tokens: 20_000 });
  });

  it("background is refused, naming it; a reasoning summary asked for (Codex CLI's default) runs and is answered as none", async () => {
    await refused("/v1/responses", responses("gpt-4o-mini", { background: true }), "background");
    await refused("/v1/responses", responses("gpt-4o-mini", { reasoning: { summary: "sometimes" } }), "summary");
    const fake = fakeOpenAI().reply("fine").reply("fine");
    const body = await ok("/v1/responses", responses("gpt-4o-mini", { reasoning: { effort: "low", summary: "auto" } }));
    expect(body.reasoning).toEqual({ effort: "low", summary: null });
    expect((body.output as { type: string }[]).map((o) => o.type)).toEqual(["message"]);
    expect(fake.last.body).not.toHaveProperty("summary");
    await ok("/v1/responses", responses("gpt-4o-mini", { background: false, reasoning: { effort: null, summary: null } }));
  });

  it('truncation "disabled": a conversation that does not fit the window is 400 BEM-112; "auto" drops its oldest turns', async () => {
    // llama3.2's window is 4,096 tokens: each input below is about 2,500 of them.
    const big = (w: string) => `${w} `.repeat(2500);
    fakeOllama().reply("first").reply("second");
    const first = await ok("/v1/responses", { model: "llama3.2", input: big("alpha") });
    const next = { model: "llama3.2", input: big("beta"), previous_response_id: first.id };
    await refused("/v1/responses", { ...next, truncation: "disabled" }, "truncation", "BEM-112");
    const auto = await ok("/v1/responses", { ...next, truncation: "auto" });
    expect(auto.status).toBe("completed");
  });

  it("max_tool_calls caps the agent's own tool calls: later ones are not run and the model is told", async () => {
    const t = tenant();
    const remember = (n: number) => ({ id: `call_${n}`, name: "remember", arguments: { kind: "note", key: `k${n}`, text: `fact ${n}` } });
    const fake = fakeOpenAI()
      .reply({ tool_calls: [remember(1), remember(2), remember(3)] })
      .reply("done");
    await ok("/v1/responses", { model: "gpt-4o-mini", agent: "memory-assistant", input: "remember three", max_tool_calls: 2 });
    const stored = await env.DB.prepare("SELECT key FROM facts WHERE tenant_id = ? AND key IN ('k1','k2','k3') ORDER BY key")
      .bind(t.tenant)
      .all<{ key: string }>();
    expect(stored.results.map((r) => r.key)).toEqual(["k1", "k2"]);
    const toolResults = (fake.calls[1]!.body as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === "tool");
    expect(toolResults.at(-1)!.content).toContain("max_tool_calls (2)");
  });
});
