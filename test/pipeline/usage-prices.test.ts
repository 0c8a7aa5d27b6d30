import { describe, expect, it } from "vitest";
import { ModelConfig } from "../../src/config/model-config";
import { microUsdOf, usageOf } from "../../src/pipeline/usage";

const model = ModelConfig.parse({ name: "m", provider: "openai", input_cost_per_1k_tokens: 0.003, output_cost_per_1k_tokens: 0.015 });

describe("usage cost bills input and output tokens at their own prices", () => {
  it("1,000 prompt tokens and 200 completion tokens: $0.003 + $0.003", () => {
    const u = usageOf([{ role: "user", content: "hi" }], model, {
      message: { role: "assistant", content: "hello" },
      finish_reason: "stop",
      upstream_model: "m",
      usage: { prompt_tokens: 1000, completion_tokens: 200 },
    });
    expect(u.cost).toBe(0.006);
    expect(microUsdOf(model, 1000, 200)).toBe(6000);
  });

  it("is whole micro-USD, never less for more tokens (a budget adds exact integers)", () => {
    const cheap = ModelConfig.parse({ name: "c", provider: "openai", cost_per_1k_tokens: 0.00015 });
    let last = 0;
    for (let t = 0; t < 3000; t += 7) {
      const micro = microUsdOf(cheap, t, t);
      expect(Number.isInteger(micro)).toBe(true);
      expect(micro).toBeGreaterThanOrEqual(last);
      last = micro;
    }
    expect(microUsdOf(cheap, 1000, 1000)).toBe(300);
  });
});
