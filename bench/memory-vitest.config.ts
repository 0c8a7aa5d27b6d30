import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * Runs the memory benchmarks (and the cost of traces, bench/traces-cost.bench.ts) inside workerd against
 * real D1 and real Durable Object storage: npx vitest run -c bench/memory-vitest.config.ts [file]
 * They print BENCH lines; they are not part of `npm test`.
 */
export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { TEST_MIGRATIONS: await readD1Migrations("migrations"), OPERATOR_KEY: "bench-operator-key" } },
    }),
  ],
  test: {
    include: ["bench/memory-*.bench.ts", "bench/traces-*.bench.ts"],
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
}));
