import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * The LangGraph checkpointer benchmark, inside workerd against real Durable Object
 * storage and D1: npx vitest run -c bench/langgraph-vitest.config.ts
 * It prints its figures; it is not part of `npm test`.
 */
export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { TEST_MIGRATIONS: await readD1Migrations("migrations"), OPERATOR_KEY: "test-operator-key" } },
    }),
  ],
  test: { include: ["bench/langgraph.bench.ts"], setupFiles: ["./test/setup.ts"], testTimeout: 600_000, hookTimeout: 600_000 },
}));
