import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * Runs the thread benchmarks inside workerd against real Durable Object
 * SQLite storage: npx vitest run -c bench/thread-vitest.config.ts
 * They print their figures; they are not part of `npm test`.
 */
export default defineConfig({
  // 100,000 seeded messages hold ~23 MB, past the default 16 MiB MAX_THREAD_BYTES cap on a live thread.
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" }, miniflare: { bindings: { MAX_THREAD_BYTES: String(64 * 1024 * 1024) } } })],
  test: {
    include: ["bench/thread-*.bench.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
  },
});
