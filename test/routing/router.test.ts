import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isAppError } from "../../src/core/errors";
import { AgentConfig, ModelConfig, type ModelConfigInput } from "../../src/config/model-config";
import { ModelRouter } from "../../src/routing/router";
import { CostAwareStrategy, ModalityStrategy } from "../../src/routing/strategies/defaults";
import type { RoutingStrategy } from "../../src/routing/strategy";
import { referenceRoute } from "./reference-router";

const model = (name: string, over: Partial<ModelConfigInput> = {}): ModelConfig => ModelConfig.parse({ name, provider: "openai", ...over });
const agent = (name: string, tags: string[], over: Partial<AgentConfig> = {}) => AgentConfig.parse({ name, tags, ...over });
const image = [
  { type: "text" as const, text: "what is this?" },
  { type: "image_url" as const, image_url: { url: "https://x.test/cat.png" } },
];
const names = (ms: readonly ModelConfig[]) => ms.map((m) => m.name);

/** Runs `fn`, expecting an AppError with `code`; returns its message. */
function codeOf(fn: () => unknown): { code: string; status: number; message: string } {
  try {
    fn();
  } catch (e) {
    if (isAppError(e)) return { code: e.code, status: e.status, message: e.message };
    throw e;
  }
  throw new Error("expected an AppError");
}

const catalogue = [
  model("cheap-text", { cost_per_1k_tokens: 0.0001, capabilities: ["tools"], max_tokens: 8000 }),
  model("vision", { modalities: ["text", "image"], cost_per_1k_tokens: 0.002, capabilities: ["tools"], max_tokens: 128000 }),
  model("coder", { cost_per_1k_tokens: 0.003, capabilities: ["code", "tools"], max_tokens: 200000 }),
  model("listener", { modalities: ["text", "audio"], cost_per_1k_tokens: 0.0025 }),
];

describe("model_override", () => {
  const router = new ModelRouter(catalogue, "cheap-text");

  it("a known override wins over cheaper candidates and is the only candidate", () => {
    const r = router.resolve({ content: "hi", model_override: "coder" });
    expect(r.model.name).toBe("coder");
    expect(names(r.candidates)).toEqual(["coder"]);
    expect(r.trace.map((t) => t.strategy)).toEqual(["model_override"]);
    expect(r.reason).toContain("model_override");
  });

  it("an unknown override falls through to the strategies, noted in the trace", () => {
    const r = router.resolve({ content: "hi", model_override: "gpt-9" });
    expect(r.model.name).toBe("cheap-text");
    expect(r.trace[0]).toMatchObject({ strategy: "model_override", output: [], excluded: [{ model: "gpt-9", reason: expect.stringContaining("unknown") }] });
    expect(r.trace.map((t) => t.strategy)).toEqual(["model_override", "availability", "modality", "capability", "context_window", "cost_aware", "fallback"]);
  });

  it('"auto" routes by strategies without a note', () => {
    const r = router.resolve({ content: "hi", model_override: "auto" });
    expect(r.model.name).toBe("cheap-text");
    expect(r.trace[0]!.strategy).toBe("availability");
  });

  it("an override that lacks a modality of the request is BEM-046 (400)", () => {
    const e = codeOf(() => router.resolve({ content: image, model_override: "cheap-text" }));
    expect(e).toMatchObject({ code: "BEM-046", status: 400 });
    expect(e.message).toContain("lacks image");
  });

  it("an override that lacks an explicitly requested capability is BEM-046", () => {
    const e = codeOf(() => router.resolve({ content: "hi", metadata: { capabilities: ["code"] }, model_override: "vision" }));
    expect(e.code).toBe("BEM-046");
    expect(e.message).toContain("capability code");
  });

  it("an override whose context window is too small is BEM-046", () => {
    const e = codeOf(() => router.resolve({ content: "hi", min_context_tokens: 9000, model_override: "cheap-text" }));
    expect(e.code).toBe("BEM-046");
    expect(e.message).toContain("context window 8000 < 9000");
  });

  it("agent tags do not constrain an override (they are soft)", () => {
    const r = router.resolve({ content: "hi", agent: agent("a", ["code"]), model_override: "cheap-text" });
    expect(r.model.name).toBe("cheap-text");
  });
});

describe("strategies", () => {
  it("an image request never goes to a text-only model: not by cost, fallback or default", () => {
    const models = [model("text-free", { cost_per_1k_tokens: 0 }), model("seer", { modalities: ["image", "text"], cost_per_1k_tokens: 0.01 })];
    const router = new ModelRouter(models, "text-free");
    const r = router.resolve({ content: image });
    expect(names(r.candidates)).toEqual(["seer"]);

    // Only text models left: fallback and the (text-only) default must both refuse.
    const textOnly = new ModelRouter([models[0]!, model("text-2")], "text-free");
    const e = codeOf(() => textOnly.resolve({ content: image }));
    expect(e.code).toBe("BEM-041");
    expect(e.message).toContain("modality removed text-free (lacks image input), text-2 (lacks image input)");
    expect(e.message).toContain("default_model text-free fails too (lacks image input)");
  });

  it("audio and video parts are required modalities too", () => {
    const router = new ModelRouter(catalogue, null);
    const r = router.resolve({ content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] });
    expect(names(r.candidates)).toEqual(["listener"]);
    expect(r.requirements.modalities).toEqual(["audio"]);
    const e = codeOf(() => router.resolve({ messages: [{ role: "user", content: [{ type: "video_url", video_url: { url: "https://x.test/v.mp4" } }] }] }));
    expect(e.code).toBe("BEM-041");
  });

  it("agent tags some model lists narrow softly; fallback relaxes them but keeps hard requirements", () => {
    const router = new ModelRouter(catalogue, null);
    // "code" is listed by coder (text only); with an image only vision can serve, so the tag is relaxed.
    const r = router.resolve({ content: image, agent: agent("dev", ["code"]) });
    expect(r.model.name).toBe("vision");
    const cap = r.trace.find((t) => t.strategy === "capability")!;
    expect(cap.excluded).toEqual([{ model: "vision", reason: "lacks capability code (agent tag, soft)" }]);
    const fb = r.trace.find((t) => t.strategy === "fallback")!;
    expect(fb.input).toEqual([]);
    expect(fb.output).toEqual(["vision"]);
    expect(r.reason).toContain("fallback");

    // Without the image, the tag narrows to coder.
    expect(router.resolve({ content: "write code", agent: agent("dev", ["code"]) }).model.name).toBe("coder");
  });

  it("explicit metadata.capabilities are hard: fallback does not relax them and BEM-041 says who removed what", () => {
    const router = new ModelRouter(catalogue, "cheap-text");
    const e = codeOf(() => router.resolve({ content: image, metadata: { capabilities: ["code"] } }));
    expect(e.code).toBe("BEM-041");
    expect(e.status).toBe(422);
    expect(e.message).toContain("modality removed cheap-text (lacks image input), coder (lacks image input), listener (lacks image input)");
    expect(e.message).toContain("capability removed vision (lacks capability code)");
    expect(e.message).toContain("default_model cheap-text fails too");
  });

  it("agent tags no model lists are ignored, not a filter", () => {
    const r = new ModelRouter(catalogue, null).resolve({ content: "hi", agent: agent("x", ["friendly"]) });
    expect(r.model.name).toBe("cheap-text");
    expect(r.requirements.capabilitySource).toBe("none");
    expect(r.trace.find((t) => t.strategy === "capability")!.note).toContain("friendly match no model capability");
  });

  it("cost ties are broken by config order", () => {
    const models = ["m-c", "m-a", "m-b", "m-d"].map((n, i) => model(n, { cost_per_1k_tokens: i === 3 ? 0.5 : 0.1 }));
    const r = new ModelRouter(models, null).resolve({ content: "hi" });
    expect(names(r.candidates)).toEqual(["m-c", "m-a", "m-b", "m-d"]);
  });

  it("0-cost models are valid and cheapest; an omitted cost is 0", () => {
    const models = [model("paid", { cost_per_1k_tokens: 0.001 }), model("free", { cost_per_1k_tokens: 0 }), model("unpriced")];
    expect(models[2]!.cost_per_1k_tokens).toBe(0);
    expect(names(new ModelRouter(models, null).resolve({ content: "hi" }).candidates)).toEqual(["free", "unpriced", "paid"]);
  });

  it("models whose context window cannot hold the request are dropped before cost sorting", () => {
    const router = new ModelRouter(catalogue, null);
    const r = router.resolve({ content: "hi", min_context_tokens: 100_000 });
    expect(names(r.candidates)).toEqual(["vision", "coder"]);
    const cw = r.trace.find((t) => t.strategy === "context_window")!;
    expect(cw.excluded).toContainEqual({ model: "cheap-text", reason: "context window 8000 < 100000 tokens needed" });
    // Without min_context_tokens the content is estimated (~4 chars per token).
    const long = router.resolve({ content: "x".repeat(40_000) });
    expect(long.requirements.minContextTokens).toBeGreaterThan(10_000);
    expect(long.model.name).not.toBe("cheap-text");
  });

  it("the trace chains: each step's input is the previous step's output", () => {
    const r = new ModelRouter(catalogue, null).resolve({ content: image });
    for (let i = 1; i < r.trace.length; i++) expect(r.trace[i]!.input).toEqual(r.trace[i - 1]!.output);
    expect(r.trace[0]!.input).toEqual(names(catalogue));
    expect(r.trace.at(-1)!.output).toEqual(names(r.candidates));
  });

  it("the agent's preferred model comes first when it can serve, else routing proceeds", () => {
    const router = new ModelRouter(catalogue, null);
    const r = router.resolve({ content: "hi", agent: agent("a", [], { model: "coder" }) });
    expect(names(r.candidates)).toEqual(["coder", "cheap-text", "vision", "listener"]);
    const r2 = router.resolve({ content: image, agent: agent("a", [], { model: "coder" }) });
    expect(r2.model.name).toBe("vision");
    expect(r2.trace.find((t) => t.strategy === "agent_model")!.excluded[0]!.reason).toContain("lacks image");
  });
});

describe("availability", () => {
  const offline = model("echo", { provider: "custom", provider_config: { base_url: "http://offline.invalid/v1" }, extra: { offline: true } });

  it("offline models route only when allowed, and an override of one is refused otherwise", () => {
    const models = [offline, ...catalogue];
    const closed = new ModelRouter(models, null);
    const r = closed.resolve({ content: "hi" });
    expect(r.model.name).toBe("cheap-text");
    expect(r.trace.find((t) => t.strategy === "availability")!.excluded).toEqual([{ model: "echo", reason: expect.stringContaining("EDGEWEAVE_OFFLINE=1") }]);
    expect(codeOf(() => closed.resolve({ content: "hi", model_override: "echo" })).code).toBe("BEM-077");

    const open = new ModelRouter(models, null, { allowOffline: true });
    expect(open.resolve({ content: "hi" }).model.name).toBe("echo");
  });

  it("unavailable models are never returned by fallback or default", () => {
    const router = new ModelRouter([offline, model("t")], "echo", { isAvailable: (m) => (m.name === "t" ? "secret T_KEY is not set" : true) });
    const e = codeOf(() => router.resolve({ content: "hi" }));
    expect(e.code).toBe("BEM-041");
    expect(e.message).toContain("availability removed echo (offline model; enabled only when EDGEWEAVE_OFFLINE=1), t (secret T_KEY is not set)");
    expect(e.message).toContain("default_model echo fails too");
  });

  it("auto_route: false models are only used when named", () => {
    const local = model("local", { provider: "ollama", extra: { auto_route: false } });
    const router = new ModelRouter([local, model("cloud", { cost_per_1k_tokens: 1 })], null);
    expect(router.resolve({ content: "hi" }).model.name).toBe("cloud");
    expect(router.resolve({ content: "hi", model_override: "local" }).model.name).toBe("local");
    expect(router.availabilityOf("local")).toContain("auto_route: false");
  });

  it("a missing secret hides a model from auto routing but naming it still works", () => {
    const router = new ModelRouter(catalogue, null, { isAvailable: (m) => (m.name === "coder" ? "secret CODER_KEY is not set" : true) });
    expect(codeOf(() => router.resolve({ content: "hi", metadata: { capabilities: ["code"] } })).message).toContain(
      "availability removed coder (secret CODER_KEY is not set)",
    );
    expect(router.resolve({ content: "hi", model_override: "coder" }).model.name).toBe("coder");
  });
});

describe("construction and custom strategies", () => {
  it("duplicate model names are BEM-042", () => {
    expect(codeOf(() => new ModelRouter([model("a"), model("b"), model("a")], null)).code).toBe("BEM-042");
  });

  it("duplicate or reserved strategy names are BEM-042; an unknown default is BEM-045", () => {
    expect(codeOf(() => ModelRouter.withStrategies(catalogue, [ModalityStrategy, ModalityStrategy])).code).toBe("BEM-042");
    expect(codeOf(() => ModelRouter.withStrategies(catalogue, [{ name: "availability", apply: (c) => ({ kept: [...c], excluded: [] }) }])).code).toBe(
      "BEM-042",
    );
    expect(codeOf(() => new ModelRouter(catalogue, "nope")).code).toBe("BEM-045");
  });

  it("a custom strategy runs in order, with its exclusions in the trace", () => {
    const preferAudio: RoutingStrategy = {
      name: "prefer_audio",
      apply: (cands) => ({
        kept: [...cands].sort((a, b) => Number(b.modalities.includes("audio")) - Number(a.modalities.includes("audio"))),
        excluded: [],
      }),
    };
    const noCoder: RoutingStrategy = {
      name: "no_coder",
      apply: (cands) => ({ kept: cands.filter((m) => m.name !== "coder"), excluded: [{ model: "coder", reason: "team policy" }] }),
    };
    const router = ModelRouter.withStrategies(catalogue, [noCoder, CostAwareStrategy, preferAudio], null);
    const r = router.resolve({ content: "hi" });
    expect(names(r.candidates)).toEqual(["listener", "cheap-text", "vision"]);
    expect(r.trace.map((t) => t.strategy)).toEqual(["availability", "no_coder", "cost_aware", "prefer_audio"]);
    expect(r.trace[1]!.excluded).toEqual([{ model: "coder", reason: "team policy" }]);
  });

  it("a custom strategy cannot bring back an unavailable model", () => {
    const everything: RoutingStrategy = { name: "everything", apply: (_c, ctx) => ({ kept: [...ctx.models], excluded: [] }) };
    const router = ModelRouter.withStrategies(catalogue, [everything], null, { isAvailable: (m) => (m.name === "vision" ? "secret V is not set" : true) });
    expect(names(router.resolve({ content: "hi" }).candidates)).not.toContain("vision");
  });

  it("default_model answers when the strategies leave nothing, if it meets the hard requirements", () => {
    const none: RoutingStrategy = { name: "none", apply: (c) => ({ kept: [], excluded: c.map((m) => ({ model: m.name, reason: "closed" })) }) };
    const router = ModelRouter.withStrategies(catalogue, [none], "vision");
    const r = router.resolve({ content: "hi" });
    expect(r.model.name).toBe("vision");
    expect(r.trace.at(-1)!.strategy).toBe("default_model");
    expect(codeOf(() => router.resolve({ content: [{ type: "input_audio", input_audio: { data: "AA", format: "wav" } }] })).code).toBe("BEM-041");
  });
});

describe("matches the plain filter/sort reference on random catalogues", () => {
  const caps = ["tools", "code", "json", "fast"];
  const mods = ["text", "image", "audio", "video"] as const;
  const arbModel = fc.record({
    modalities: fc.subarray([...mods], { minLength: 1 }),
    capabilities: fc.subarray(caps),
    cost_per_1k_tokens: fc.constantFrom(0, 0.0001, 0.001, 0.001, 0.01),
    max_tokens: fc.constantFrom(4096, 32000, 128000),
    available: fc.boolean(),
  });

  it("same candidates in the same order, and every answer meets the hard requirements", () => {
    fc.assert(
      fc.property(
        fc.array(arbModel, { minLength: 1, maxLength: 40 }),
        fc.subarray([...mods], { minLength: 1 }),
        fc.subarray(caps),
        fc.boolean(),
        fc.constantFrom(0, 5000, 64000),
        fc.option(fc.nat(39), { nil: undefined }),
        (specs, reqMods, reqCaps, explicit, minTokens, defaultIdx) => {
          const models = specs.map((s, i) => model(`m${i}`, { ...s }));
          const avail = new Set(models.filter((_, i) => specs[i]!.available).map((m) => m.name));
          const def = defaultIdx !== undefined && defaultIdx < models.length ? `m${defaultIdx}` : null;
          const router = new ModelRouter(models, def, { isAvailable: (m) => (avail.has(m.name) ? true : "off") });
          const content = reqMods.map((m) =>
            m === "text"
              ? { type: "text" as const, text: "q" }
              : m === "image"
                ? { type: "image_url" as const, image_url: { url: "https://x.test/i.png" } }
                : m === "audio"
                  ? { type: "input_audio" as const, input_audio: { data: "AA", format: "wav" } }
                  : { type: "video_url" as const, video_url: { url: "https://x.test/v.mp4" } },
          );
          const request =
            explicit && reqCaps.length > 0
              ? { content, metadata: { capabilities: reqCaps }, min_context_tokens: minTokens }
              : { content, agent: agent("a", reqCaps), min_context_tokens: minTokens };
          const listed = new Set(models.flatMap((m) => m.capabilities));
          const effectiveCaps = explicit && reqCaps.length > 0 ? reqCaps : reqCaps.filter((c) => listed.has(c));
          const expected = referenceRoute(
            models,
            { modalities: [...reqMods], capabilities: effectiveCaps, hard: explicit && reqCaps.length > 0, minTokens },
            (m) => avail.has(m.name),
            def,
          );

          let got: string[];
          try {
            got = names(router.resolve(request).candidates);
          } catch (e) {
            if (isAppError(e) && e.code === "BEM-041") got = [];
            else throw e;
          }
          expect(got).toEqual(expected);
          for (const n of got) {
            const m = models.find((x) => x.name === n)!;
            expect(avail.has(n)).toBe(true);
            expect(reqMods.every((x) => m.modalities.includes(x))).toBe(true);
            expect(m.max_tokens).toBeGreaterThanOrEqual(minTokens);
          }
        },
      ),
      { numRuns: 300, seed: 12 },
    );
  });
});
