// Routing benchmark (pure code, Node via tsx):
//   1. ModelRouter.resolve with 1,000 models and the 5 default strategies: median per call,
//      against a plain filter/sort implementation of the same rules in the same run.
//   2. Compiling a 1,000-model models.yaml (parse + validate + render the module).
// Run: npx tsx bench/routing-resolve.ts
import { cpus, loadavg } from "node:os";
import { compileModels, renderCompiledModule } from "../src/routing/compile.ts";
import { AgentConfig, ModelConfig, type Modality } from "../src/config/model-config.ts";
import type { RouteRequest } from "../src/routing/requirements.ts";
import { ModelRouter } from "../src/routing/router.ts";
import { referenceRoute } from "../test/routing/reference-router.ts";

const N_MODELS = 1000;
const CALLS = 20_000;
const WARMUP = 2_000;

// Deterministic pseudo-random numbers so runs are comparable.
let seed = 42;
const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

const CAPS = ["tools", "json", "code", "reasoning", "fast", "long_context", "vision_ocr", "math"];
const PROVIDERS = ["openai", "anthropic", "groq", "nvidia"] as const;

function modelSpec(i: number) {
  const modalities: Modality[] = ["text"];
  if (rand() < 0.4) modalities.push("image");
  if (rand() < 0.1) modalities.push("audio");
  if (rand() < 0.05) modalities.push("video");
  return {
    name: `model-${i}`,
    provider: pick(PROVIDERS),
    modalities,
    capabilities: CAPS.filter(() => rand() < 0.35),
    cost_per_1k_tokens: pick([0, 0.00005, 0.00015, 0.0005, 0.0008, 0.0025, 0.003, 0.01]),
    max_tokens: pick([4096, 8192, 32768, 128000, 200000]),
  };
}

const specs = Array.from({ length: N_MODELS }, (_, i) => modelSpec(i));
const models = specs.map((s) => ModelConfig.parse(s));
const unavailable = new Set(models.filter(() => rand() < 0.1).map((m) => m.name));
const router = new ModelRouter(models, "model-0", { isAvailable: (m) => (unavailable.has(m.name) ? "secret not set" : true) });

const imagePart = { type: "image_url" as const, image_url: { url: "https://x.test/a.png" } };
const agent = AgentConfig.parse({ name: "dev", tags: ["code", "tools"] });
const requests: RouteRequest[] = [
  { content: "Summarise this paragraph for me, please." },
  { content: [{ type: "text", text: "What is in this picture?" }, imagePart] },
  { content: "Call the weather tool", metadata: { capabilities: ["tools", "json"] } },
  { content: "Refactor this function", agent },
  { content: "Long document follows", min_context_tokens: 100_000 },
  {
    content: [
      { type: "text", text: "transcribe" },
      { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } },
    ],
    metadata: { capabilities: ["math", "vision_ocr", "code"] },
  },
];

// The baseline needs the derived requirements as plain data; derive them once per request outside the timing.
const derived = requests.map((r) => {
  const res = router.resolve(r);
  return {
    modalities: res.requirements.modalities,
    capabilities: res.requirements.capabilities,
    hard: res.requirements.capabilitiesHard,
    minTokens: res.requirements.minContextTokens,
  };
});

// Both implementations must agree before their speed is worth comparing.
requests.forEach((r, i) => {
  const a = router
    .resolve(r)
    .candidates.map((m) => m.name)
    .join(",");
  const b = referenceRoute(models, derived[i]!, (m) => !unavailable.has(m.name), "model-0").join(",");
  if (a !== b) throw new Error(`router and baseline disagree on request ${i}`);
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Per-call timings of `a` and `b`, interleaved in blocks so that load from other
 * processes on a shared machine hits both alike.
 */
function timeInterleaved(a: (i: number) => unknown, b: (i: number) => unknown): { a: number[]; b: number[] } {
  for (let i = 0; i < WARMUP; i++) {
    a(i);
    b(i);
  }
  const sa: number[] = [];
  const sb: number[] = [];
  const BLOCK = 500;
  for (let start = 0; start < CALLS; start += BLOCK) {
    for (const [fn, out] of [
      [a, sa],
      [b, sb],
    ] as const) {
      for (let i = start; i < start + BLOCK; i++) {
        const t0 = process.hrtime.bigint();
        fn(i);
        out.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
    }
  }
  return { a: sa, b: sb };
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return { median: s[Math.floor(s.length / 2)]!, p90: s[Math.floor(s.length * 0.9)]!, min: s[0]! };
};

const t = timeInterleaved(
  (i) => router.resolve(requests[i % requests.length]!),
  (i) => referenceRoute(models, derived[i % derived.length]!, (m) => !unavailable.has(m.name), "model-0"),
);
const routed = stats(t.a);
const baseline = stats(t.b);
const perShape = requests.map((_, k) => stats(t.a.filter((_, i) => i % requests.length === k)).median);

// YAML compile for 1,000 models: the text a user would write.
const yamlText =
  "default_model: model-0\nmodels:\n" +
  specs
    .map(
      (s) =>
        `  - name: ${s.name}\n    provider: ${s.provider}\n    modalities: [${s.modalities.join(", ")}]\n` +
        `    capabilities: [${s.capabilities.join(", ")}]\n    cost_per_1k_tokens: ${s.cost_per_1k_tokens}\n    max_tokens: ${s.max_tokens}\n` +
        `    provider_config:\n      timeout_ms: 60000\n`,
    )
    .join("");
const compileMs: number[] = [];
let moduleBytes = 0;
for (let i = 0; i < 7; i++) {
  const t0 = performance.now();
  const data = compileModels(yamlText, "bench.yaml", 0);
  moduleBytes = renderCompiledModule(data, "bench.yaml").length;
  compileMs.push(performance.now() - t0);
}

const fmt = (x: number) => x.toFixed(1);
console.log(`machine: ${cpus()[0]?.model ?? "unknown"} x${cpus().length}, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log(`resolve, ${N_MODELS} models, 5 strategies + availability, ${CALLS} calls over ${requests.length} request shapes (with trace):`);
console.log(`  ModelRouter.resolve      median ${fmt(routed.median)} us   p90 ${fmt(routed.p90)} us`);
console.log(`  baseline filter/sort     median ${fmt(baseline.median)} us   p90 ${fmt(baseline.p90)} us   (no trace, no reasons)`);
console.log(
  `  resolve median per request shape: ${perShape.map(fmt).join(" / ")} us (text / image / explicit caps / agent tags / 100k context / audio + 3 caps)`,
);
console.log(
  `  load average at the end: ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")} (2 cores shared; higher means noisier numbers)`,
);
console.log(
  `compile ${N_MODELS}-model YAML (${(yamlText.length / 1024).toFixed(0)} KiB -> ${(moduleBytes / 1024).toFixed(0)} KiB module): median ${fmt(median(compileMs))} ms over ${compileMs.length} runs`,
);
