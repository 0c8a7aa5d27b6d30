import { describe, expect, it } from "vitest";
import { isAppError } from "../../src/core/errors";
import { ModelConfig } from "../../src/config/model-config";
import { aliasConflicts, ModelNames } from "../../src/routing/aliases";
import { ModelRouter } from "../../src/routing/router";
import { loadModelsFromYaml } from "../../src/routing/yaml-loader";
import { fakeAnthropic } from "../support/fake-anthropic";
import { api } from "../support/tenants";
import { openaiClient, tenantForRuns } from "../support/runs";

/** Issue 22 item 5: per-model aliases (a trailing * matches any suffix), checked at build time, on every route. */
const tenant = tenantForRuns();

const yaml = (...lines: string[]) => `${lines.join("\n")}\n`;
function loadError(text: string): { code: string; message: string } {
  try {
    loadModelsFromYaml(text, "models.yaml");
  } catch (e) {
    if (isAppError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error("expected the loader to refuse this file");
}

const model = (name: string, aliases?: string[]) => ModelConfig.parse({ name, provider: "openai", ...(aliases ? { aliases } : {}) });

describe("models.yaml aliases", () => {
  it("a duplicate or overlapping alias is BEM-042 with its file and line", () => {
    const two = (a: string, b: string) =>
      yaml("models:", "  - name: a", "    provider: openai", `    aliases: [${a}]`, "  - name: b", "    provider: openai", `    aliases: [${b}]`);
    const overlap = loadError(two("claude-*", "claude-sonnet-*"));
    expect(overlap.code).toBe("BEM-042");
    expect(overlap.message).toContain("models.yaml:7: models[1].aliases[0]");
    expect(overlap.message).toContain('alias "claude-sonnet-*" overlaps alias "claude-*" of model a');
    expect(loadError(two("x-1", "x-1")).code).toBe("BEM-042");
    expect(loadError(two("b*", "c")).message).toContain('alias "b*" overlaps model name "b" of model b');
    expect(loadError(yaml("models:", "  - name: a", "    provider: openai", "    aliases: [z, z]")).message).toContain('duplicate alias "z"');
    expect(loadError(yaml("models:", "  - name: a", "    provider: openai", "    aliases: ['bad name*']")).code).toBe("BEM-044");
    // Disjoint patterns and a pattern matching its own model's name are fine.
    expect(() => loadModelsFromYaml(two("claude-haiku-*", "claude-sonnet-*"))).not.toThrow();
    expect(() => loadModelsFromYaml(yaml("models:", "  - name: gpt", "    provider: openai", "    aliases: [gpt-*]"))).not.toThrow();
  });

  it("resolves a name, then an exact alias, then the pattern; a router built in code refuses overlaps too", () => {
    const names = new ModelNames([model("a", ["alpha", "al-*"]), model("b", ["beta-*"])]);
    expect(names.lookup("a")?.name).toBe("a");
    expect(names.lookup("alpha")?.name).toBe("a");
    expect(names.lookup("al-2025")?.name).toBe("a");
    expect(names.lookup("beta-x")?.name).toBe("b");
    expect(names.lookup("gamma")).toBeUndefined();
    expect(aliasConflicts([model("a", ["x*"]), model("b", ["xy"])])).toHaveLength(1);
    expect(() => new ModelRouter([model("a", ["x*"]), model("b", ["xy*"])])).toThrow(/overlaps/);
  });

  it("apply on every route: chat, invoke, /v1/route, /v1/models/{name}", async () => {
    const key = tenant().adminKey;
    const dated = "claude-sonnet-4-5-20250929";
    const up = fakeAnthropic().reply("chat via alias").reply("invoke via alias");
    const chat = await openaiClient(key).chat.completions.create({ model: dated, messages: [{ role: "user", content: "hi" }] });
    expect(chat.model).toBe("claude-sonnet-4");
    expect(up.calls[0]!.body.model).toBe("claude-sonnet-4-20250514");
    const invoke = await api("/v1/invoke", {
      key,
      body: { agent_name: "assistant", session_id: `alias-${crypto.randomUUID().slice(0, 8)}`, model_override: dated, content: [{ type: "text", text: "hi" }] },
    });
    expect(invoke.status).toBe(200);
    expect(invoke.headers.get("x-edgeweave-model")).toBe("claude-sonnet-4");
    const route = (await (
      await api("/v1/route", { key, body: { model: "claude-haiku-4-5-20251001", messages: [{ role: "user", content: "hi" }] } })
    ).json()) as {
      model: string;
    };
    expect(route.model).toBe("claude-3-5-haiku");
    const info = (await (await api(`/v1/models/${dated}`, { key })).json()) as { id: string; aliases: string[]; max_output_tokens: number };
    expect(info).toMatchObject({ id: "claude-sonnet-4", aliases: ["claude-sonnet-*", "claude-opus-*"], max_output_tokens: 64000 });
    // An unknown name is still the OpenAI-shaped 404 on chat.
    const typo = await api("/v1/chat/completions", { key, body: { model: "claude-sonet", messages: [{ role: "user", content: "hi" }] } });
    expect(typo.status).toBe(404);
  });
});
