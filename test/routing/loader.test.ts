import { describe, expect, it } from "vitest";
import shipped from "../../models.yaml?raw";
import brokenFixture from "./fixtures/broken.yaml?raw";
import { isAppError } from "../../src/core/errors";
import { compileModels } from "../../src/routing/compile";
import { compiled } from "../../src/routing/models.generated";
import { loadModelsFromYaml } from "../../src/routing/yaml-loader";

function loadError(text: string, file = "models.yaml"): { code: string; message: string } {
  try {
    loadModelsFromYaml(text, file);
  } catch (e) {
    if (isAppError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error("expected the loader to refuse this file");
}

const yaml = (...lines: string[]) => lines.join("\n") + "\n";

describe("the shipped models.yaml", () => {
  const file = loadModelsFromYaml(shipped);

  it("compiles, and the bundled module is built from it", () => {
    const fresh = compileModels(shipped, "models.yaml", compiled.created);
    expect(fresh).toEqual(compiled);
  });

  it("lists the offline model first, every provider, and a default that exists", () => {
    expect(file.models[0]).toMatchObject({
      name: "offline-echo",
      provider: "custom",
      cost_per_1k_tokens: 0,
      capabilities: ["tools"],
      extra: { offline: true },
    });
    expect(new Set(file.models.map((m) => m.provider))).toEqual(new Set(["openai", "anthropic", "custom", "ollama", "groq", "nvidia"]));
    expect(file.default_model).toBe("gpt-4o-mini");
    for (const m of file.models) {
      expect(m.provider_config.base_url).toMatch(/^https?:\/\//);
      // Names of secrets only, never a key.
      expect(Object.keys(m.provider_config).filter((k) => /key|secret|token/i.test(k) && k !== "api_key_env")).toEqual([]);
    }
    expect(file.agents.map((a) => a.name)).toEqual(["assistant", "support", "planner", "long-chat", "memory-assistant", "approver", "note-taker"]);
  });
});

describe("loadModelsFromYaml", () => {
  it("applies defaults: text only, no capabilities, cost 0, 4096 tokens, the provider's URL and secret", () => {
    const f = loadModelsFromYaml(yaml("models:", "  - name: m", "    provider: groq"));
    expect(f.models[0]).toEqual({
      name: "m",
      provider: "groq",
      modalities: ["text"],
      capabilities: [],
      cost_per_1k_tokens: 0,
      input_cost_per_1k_tokens: 0,
      output_cost_per_1k_tokens: 0,
      max_tokens: 4096,
      provider_config: { base_url: "https://api.groq.com/openai/v1", api_key_env: "GROQ_API_KEY" },
      extra: {},
    });
    expect(f.default_model).toBeNull();
    expect(f.agents).toEqual([]);
  });

  it("ignores unknown keys and reports them as warnings with their line", () => {
    const warnings: string[] = [];
    const f = loadModelsFromYaml(yaml("models:", "  - name: m", "    provider: openai", "    cost_per_1k_token: 3"), "models.yaml", {
      onWarning: (w) => warnings.push(w),
    });
    expect(f.models[0]!.cost_per_1k_tokens).toBe(0);
    expect(warnings).toEqual(["models.yaml:4: models[0].cost_per_1k_token: unknown key, ignored"]);
  });

  it("BEM-044 for a schema error, with file, line and path", () => {
    const e = loadError(brokenFixture, "broken.yaml");
    expect(e.code).toBe("BEM-044");
    expect(e.message).toMatch(/^broken\.yaml:10: models\[1\]\.provider: Invalid option/);
  });

  it("BEM-044 for an agent's misspelt middleware setting or unknown tool, with the line", () => {
    const e = loadError(
      yaml(
        "models:",
        "  - name: m",
        "    provider: openai",
        "agents:",
        "  - name: a",
        "    middleware:",
        "      - name: trim",
        "        max_tokns: 5",
        "    tools: [nope]",
      ),
    );
    expect(e.code).toBe("BEM-044");
    expect(e.message).toContain('models.yaml:7: agents[0].middleware[0]: Unrecognized key: "max_tokns"');
    expect(e.message).toContain("models.yaml:9: agents[0].tools[0]: not a server tool");
  });

  it("BEM-044 for a human_in_the_loop tool the agent does not have, with the line", () => {
    const e = loadError(
      yaml(
        "models:",
        "  - name: m",
        "    provider: openai",
        "agents:",
        "  - name: a",
        "    middleware:",
        "      - name: human_in_the_loop",
        "        tools: [set_user_nmae]",
        "    tools: [set_user_name]",
      ),
    );
    expect(e.code).toBe("BEM-044");
    expect(e.message).toContain("agents[0].middleware[0].tools[0]: 'set_user_nmae' is not one of this agent's tools (set_user_name)");
  });

  it("an agent's recall: defaults on, false for the newest window only, out of range a BEM-044 with its line", () => {
    const agents = (...lines: string[]) =>
      loadModelsFromYaml(yaml("models:", "  - name: m", "    provider: openai", "agents:", "  - name: a", ...lines)).agents[0]!;
    expect(agents().recall).toEqual({ share: 0.75, neighbours: 2 });
    expect(agents("    recall: false").recall).toBe(false);
    expect(agents("    recall: {neighbours: 3}").recall).toEqual({ share: 0.75, neighbours: 3 });
    const share = loadError(yaml("models:", "  - name: m", "    provider: openai", "agents:", "  - name: a", "    recall:", "      share: 1.5"));
    expect(share.code).toBe("BEM-044");
    expect(share.message).toContain("models.yaml:7: agents[0].recall");
    const neighbours = loadError(yaml("models:", "  - name: m", "    provider: openai", "agents:", "  - name: a", "    recall: {neighbours: -1}"));
    expect(neighbours.code).toBe("BEM-044");
    expect(neighbours.message).toContain("models.yaml:6: agents[0].recall");
    expect(loadError(yaml("models:", "  - name: m", "    provider: openai", "agents:", "  - name: a", "    recall: true")).code).toBe("BEM-044");
  });

  it("budget_metadata_keys: none by default; a key holding = or a wire format's own field is a BEM-044 with its line", () => {
    const head = ["models:", "  - name: m", "    provider: openai"];
    expect(loadModelsFromYaml(yaml(...head)).budget_metadata_keys).toEqual([]);
    expect(loadModelsFromYaml(yaml(...head, "budget_metadata_keys: [team, cost.center]")).budget_metadata_keys).toEqual(["team", "cost.center"]);
    for (const bad of ["a=b", "user_id", "capabilities", ""]) {
      const e = loadError(yaml(...head, `budget_metadata_keys: ["${bad}"]`));
      expect(e.code, bad).toBe("BEM-044");
      expect(e.message, bad).toContain("models.yaml:4: budget_metadata_keys[0]");
    }
  });

  it("embedders: the built-in one by default, remote ones listed and named by the file and per agent; a bad value a BEM-044 with its line", () => {
    const head = ["models:", "  - name: m", "    provider: openai"];
    const bge = ["embedders:", "  - name: bge", "    provider: workers-ai", '    model: "@cf/baai/bge-small-en-v1.5"', "    dims: 384"];
    expect(loadModelsFromYaml(yaml(...head)).embedder).toBe("embedded");
    const file = loadModelsFromYaml(yaml(...head, ...bge, "embedder: bge", "agents:", "  - name: a", "    embedder: embedded"));
    expect(file.embedder).toBe("bge");
    expect(file.embedders).toEqual([
      { name: "bge", provider: "workers-ai", model: "@cf/baai/bge-small-en-v1.5", dims: 384, cost_per_1k_tokens: 0, timeout_ms: 3000 },
    ]);
    expect(file.agents[0]!.embedder).toBe("embedded");
    // Unknown names, by the file (line 9) and by an agent (line 12).
    const unknown = loadError(yaml(...head, ...bge, "embedder: bge-large", "agents:", "  - name: a", "    embedder: nope"));
    expect(unknown.code).toBe("BEM-044");
    expect(unknown.message).toContain('models.yaml:9: embedder: names unknown embedder "bge-large" (known: embedded, bge)');
    expect(unknown.message).toContain('models.yaml:12: agents[0].embedder: agent a names unknown embedder "nope"');
    // One entry a line from line 5: a provider no embedder has, no dims, the built-in name taken.
    const entries = [
      "{ name: x, provider: cohere, model: embed, dims: 8 }",
      "{ name: y, provider: openai, base_url: https://example.com/v1, model: e }",
      "{ name: embedded, provider: workers-ai, model: e, dims: 8 }",
    ];
    const bad = loadError(yaml(...head, "embedders:", ...entries.map((e) => `  - ${e}`)));
    expect(bad.code).toBe("BEM-044");
    expect(bad.message).toContain("models.yaml:5: embedders[0].provider");
    expect(bad.message).toContain("models.yaml:6: embedders[1].dims");
    expect(bad.message).toContain('models.yaml:7: embedders[2].name: "embedded" is the built-in embedder\'s name');
    const twice = loadError(yaml(...head, ...bge, "  - name: bge", "    provider: workers-ai", "    model: m", "    dims: 8"));
    expect(twice.code).toBe("BEM-044");
    expect(twice.message).toContain('models.yaml:9: embedders[1].name: duplicate embedder name "bge"');
  });

  it("an agent's recall channels: words, meaning or both; anything else a BEM-044 with its line", () => {
    const agents = (...lines: string[]) =>
      loadModelsFromYaml(yaml("models:", "  - name: m", "    provider: openai", "agents:", "  - name: a", ...lines)).agents[0]!;
    expect(agents("    recall: {channels: [full_text]}").recall).toEqual({ share: 0.75, neighbours: 2, channels: ["full_text"] });
    expect(agents("    recall: {channels: [dense, full_text]}").recall).toEqual({ share: 0.75, neighbours: 2, channels: ["dense", "full_text"] });
    for (const bad of ["[vectors]", "[]", "dense"]) {
      const e = loadError(yaml("models:", "  - name: m", "    provider: openai", "agents:", "  - name: a", "    recall:", `      channels: ${bad}`));
      expect(e.code).toBe("BEM-044");
      expect(e.message).toContain("models.yaml:7: agents[0].recall");
    }
  });

  it("BEM-044 for invalid YAML, with the line", () => {
    const e = loadError(yaml("models:", "  - name: m", "    provider: openai", "  bad: [unclosed"));
    expect(e.code).toBe("BEM-044");
    expect(e.message).toMatch(/^models\.yaml:[45]: /);
  });

  it("BEM-044 points a missing field at its entry, and a bad value at its own line", () => {
    const e = loadError(yaml("models:", "  - name: a", "    provider: openai", "  - name: b", "    cost_per_1k_tokens: 1"));
    expect(e.message).toBe('models.yaml:4: models[1].provider: Invalid option: expected one of "openai"|"anthropic"|"custom"|"ollama"|"groq"|"nvidia"');
    const neg = loadError(yaml("models:", "  - name: a", "    provider: openai", "    cost_per_1k_tokens: -1"));
    expect(neg.message).toMatch(/^models\.yaml:4: models\[0\]\.cost_per_1k_tokens: /);
    const img = loadError(yaml("models:", "  - name: a", "    provider: openai", "    modalities: [text, smell]"));
    expect(img.message).toMatch(/^models\.yaml:4: models\[0\]\.modalities\[1\]: /);
  });

  it("reads input and output prices; one cost_per_1k_tokens is both; the router compares the input price", () => {
    const f = loadModelsFromYaml(
      yaml(
        "models:",
        "  - name: two",
        "    provider: openai",
        "    input_cost_per_1k_tokens: 0.003",
        "    output_cost_per_1k_tokens: 0.015",
        "  - name: one",
        "    provider: openai",
        "    cost_per_1k_tokens: 0.002",
      ),
    );
    expect(f.models.map((m) => [m.cost_per_1k_tokens, m.input_cost_per_1k_tokens, m.output_cost_per_1k_tokens])).toEqual([
      [0.003, 0.003, 0.015],
      [0.002, 0.002, 0.002],
    ]);
  });

  it("BEM-044 with the line for a bad price, a lone input or output price, or both forms at once", () => {
    const model = (...lines: string[]) => loadError(yaml("models:", "  - name: a", "    provider: openai", ...lines));
    for (const bad of ["-0.1", ".nan", ".inf", "1e9", '"cheap"']) {
      const e = model(`    output_cost_per_1k_tokens: ${bad}`, "    input_cost_per_1k_tokens: 0.1");
      expect(e.code).toBe("BEM-044");
      expect(e.message).toMatch(/^models\.yaml:4: models\[0\]\.output_cost_per_1k_tokens: /);
    }
    expect(model("    cost_per_1k_tokens: 0.1", "    input_cost_per_1k_tokens: 0.2", "    output_cost_per_1k_tokens: 0.3").message).toContain(
      "models.yaml:5: models[0].input_cost_per_1k_tokens: give cost_per_1k_tokens (both prices) or input and output prices, not both forms",
    );
    expect(model("    input_cost_per_1k_tokens: 0.2").message).toBe(
      "models.yaml:4: models[0].input_cost_per_1k_tokens: output_cost_per_1k_tokens is missing (give both prices)",
    );
  });

  it("BEM-044 for an empty file and for a custom provider without base_url", () => {
    expect(loadError("").message).toMatch(/^models\.yaml:1: /);
    const e = loadError(yaml("models:", "  - name: mine", "    provider: custom"));
    expect(e).toEqual({ code: "BEM-044", message: "models.yaml:2: models[0].provider_config.base_url: required for provider custom" });
  });

  it("BEM-044 for duplicate keys in one mapping", () => {
    const e = loadError(yaml("models:", "  - name: m", "    provider: openai", "    provider: groq"));
    expect(e.code).toBe("BEM-044");
    expect(e.message).toMatch(/^models\.yaml:4: /);
  });

  it("BEM-042 for a duplicate model name, naming both lines", () => {
    const e = loadError(yaml("models:", "  - name: m", "    provider: openai", "  - name: n", "    provider: openai", "  - name: m", "    provider: groq"));
    expect(e).toEqual({ code: "BEM-042", message: 'models.yaml:6: models[2].name: duplicate model name "m" (first at line 2)' });
  });

  it("BEM-042 for a duplicate agent name", () => {
    const e = loadError(yaml("models:", "  - {name: m, provider: openai}", "agents:", "  - name: a", "  - name: a"));
    expect(e).toEqual({ code: "BEM-042", message: 'models.yaml:5: agents[1].name: duplicate agent name "a" (first at line 4)' });
  });

  it("BEM-045 when default_model or an agent's model is not in models:", () => {
    const d = loadError(yaml("default_model: gpt-5", "models:", "  - {name: m, provider: openai}"));
    expect(d).toEqual({ code: "BEM-045", message: 'models.yaml:1: default_model: names unknown model "gpt-5"' });
    const a = loadError(yaml("models:", "  - {name: m, provider: openai}", "agents:", "  - name: helper", "    model: nope"));
    expect(a).toEqual({ code: "BEM-045", message: 'models.yaml:5: agents[0].model: agent helper names unknown model "nope"' });
  });

  it("BEM-048 for a literal API key, without repeating it", () => {
    const key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX";
    const named = loadError(yaml("models:", "  - name: m", "    provider: openai", "    provider_config:", `      api_key: ${key}`));
    expect(named.code).toBe("BEM-048");
    expect(named.message).toMatch(/^models\.yaml:5: models\[0\]\.provider_config\.api_key: looks like a literal API key/);
    expect(named.message).not.toContain(key);
    // A key-shaped value anywhere, even in api_key_env or extra.
    const inEnv = loadError(yaml("models:", "  - name: m", "    provider: groq", "    provider_config:", "      api_key_env: gsk_abcdefghijklmnopqrstuvwx"));
    expect(inEnv.code).toBe("BEM-048");
    const inExtra = loadError(
      yaml(
        "models:",
        "  - name: m",
        "    provider: custom",
        "    provider_config: {base_url: 'https://llm.test/v1'}",
        "    extra:",
        "      headers: {Authorization: 'Bearer abcdefghijkl'}",
      ),
    );
    expect(inExtra).toMatchObject({ code: "BEM-048", message: expect.stringMatching(/^models\.yaml:6: models\[0\]\.extra\.headers\.Authorization: /) });
    // The NAME of a secret is fine.
    expect(() => loadModelsFromYaml(yaml("models:", "  - name: m", "    provider: openai", "    provider_config: {api_key_env: MY_OPENAI_KEY}"))).not.toThrow();
  });

  it("validates agents: scopes, middleware entries need a name", () => {
    const scope = loadError(yaml("models:", "  - {name: m, provider: openai}", "agents:", "  - name: a", "    memory_scopes: ['Organization acme']"));
    expect(scope.message).toMatch(/^models\.yaml:5: agents\[0\]\.memory_scopes\[0\]: /);
    const mw = loadError(yaml("models:", "  - {name: m, provider: openai}", "agents:", "  - name: a", "    middleware:", "      - strategy: last"));
    expect(mw.message).toMatch(/^models\.yaml:6: agents\[0\]\.middleware\[0\]\.name: /);
    const ok = loadModelsFromYaml(
      yaml("models:", "  - {name: m, provider: openai}", "agents:", "  - name: a", "    middleware:", "      - {name: trim, max_tokens: 100}"),
    );
    expect(ok.agents[0]!.middleware).toEqual([{ name: "trim", max_tokens: 100, strategy: "last", include_system: true, persist: false }]);
  });
});
