import { describe, expect, it } from "vitest";
import { api, OPERATOR_KEY } from "../support/tenants";

type ModelInfo = {
  id: string;
  object: string;
  owned_by: string;
  provider: string;
  available: boolean;
  unavailable_reason?: string;
  api_key_env: string | null;
  offline: boolean;
  modalities: string[];
};
type RouteBody = {
  model: string;
  reason: string;
  candidates: string[];
  trace: { strategy: string; input: string[]; output: string[]; excluded: { model: string; reason: string }[] }[];
  requirements: { modalities: string[]; capability_source: string };
};

const key = OPERATOR_KEY;

describe("GET /v1/models", () => {
  it("lists the bundled models in the OpenAI list shape with routing fields, and no secrets", async () => {
    const res = await api("/v1/models", { key });
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text) as { object: string; data: ModelInfo[] };
    expect(body.object).toBe("list");
    expect(body.data[0]).toMatchObject({ id: "offline-echo", object: "model", owned_by: "custom", offline: true, available: true });
    const mini = body.data.find((m) => m.id === "gpt-4o-mini")!;
    expect(mini).toMatchObject({ provider: "openai", api_key_env: "OPENAI_API_KEY", available: true, modalities: ["text", "image"] });
    // Local Ollama is listed but only used when named.
    expect(body.data.find((m) => m.id === "llama3.2")).toMatchObject({ available: false, unavailable_reason: expect.stringContaining("auto_route") });
    // The test worker's secret values never appear.
    expect(text).not.toContain("sk-test-openai");
    expect(text).not.toContain("base_url");
  });

  it("needs a key", async () => {
    expect((await api("/v1/models")).status).toBe(401);
  });

  it("GET /v1/models/{name} returns one model; an unknown name is BEM-049 (404)", async () => {
    const ok = await api("/v1/models/claude-sonnet-4", { key });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ id: "claude-sonnet-4", provider: "anthropic", upstream_model: "claude-sonnet-4-20250514" });
    const missing = await api("/v1/models/gpt-9", { key });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("BEM-049");
  });
});

describe("POST /v1/route", () => {
  const route = async (body: unknown) => {
    const res = await api("/v1/route", { key, body });
    return { status: res.status, body: (await res.json()) as RouteBody & { error?: { code: string; message: string } } };
  };

  it("a text request goes to the cheapest available model (the offline echo in tests)", async () => {
    const r = await route({ content: [{ type: "text", text: "hello" }] });
    expect(r.status).toBe(200);
    expect(r.body.model).toBe("offline-echo");
    expect(r.body.candidates[0]).toBe("offline-echo");
    expect(r.body.trace.map((t) => t.strategy)).toEqual(["availability", "modality", "capability", "context_window", "cost_aware", "fallback"]);
  });

  it("an image request goes to the cheapest image model", async () => {
    const r = await route({
      content: [
        { type: "text", text: "what is it?" },
        { type: "image_url", image_url: { url: "https://x.test/a.png" } },
      ],
    });
    expect(r.body.model).toBe("gpt-4o-mini");
    expect(r.body.requirements.modalities).toEqual(["text", "image"]);
    expect(r.body.trace.find((t) => t.strategy === "modality")!.excluded).toContainEqual({ model: "offline-echo", reason: "lacks image input" });
  });

  it("an agent's tags steer softly", async () => {
    const r = await route({ agent_name: "support", content: "my order is late" });
    expect(r.body.requirements.capability_source).toBe("agent_tags");
    expect(r.body.candidates).toEqual(["llama-3.1-8b-instruct", "llama-3.3-70b-versatile", "claude-3-5-haiku"]);
  });

  it("messages count too: audio anywhere in the conversation needs an audio model", async () => {
    const r = await route({ messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }] });
    expect(r.body.model).toBe("gpt-4o-audio-preview");
  });

  it("errors: unknown agent 404 BEM-047, bad override 400 BEM-046, impossible request 422 BEM-041, bad body 400 BEM-011", async () => {
    expect(await route({ agent_name: "nobody", content: "x" })).toMatchObject({ status: 404, body: { error: { code: "BEM-047" } } });
    const img = [{ type: "image_url", image_url: { url: "https://x.test/a.png" } }];
    expect(await route({ content: img, model_override: "llama-3.3-70b-versatile" })).toMatchObject({ status: 400, body: { error: { code: "BEM-046" } } });
    const none = await route({ content: "x", metadata: { capabilities: ["teleport"] } });
    expect(none).toMatchObject({ status: 422, body: { error: { code: "BEM-041" } } });
    expect(none.body.error!.message).toContain("capability removed offline-echo (lacks capability teleport)");
    expect(await route({ content: [{ type: "smell" }] })).toMatchObject({ status: 400, body: { error: { code: "BEM-011" } } });
  });
});
