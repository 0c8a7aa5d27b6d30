import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * Runs the thread benchmarks inside workerd against real Durable Object
 * SQLite storage: npx vitest run -c bench/thread-vitest.config.ts
 * They print their figures; they are not part of `npm test`.
 */
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
  test: {
    include: ["bench/thread-*.bench.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
  },
});
