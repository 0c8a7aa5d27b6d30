import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * The latency-model benchmark: the Worker and its thread objects in workerd, with every
 * binding and the upstream behind modelled one-way delays (bench/latency/model.ts).
 *   npx vitest run -c bench/latency-vitest.config.ts
 * BENCH_LATENCY='{"doMs":2,"d1PrimaryMs":80,"d1ReplicaMs":5,"upstreamTtftMs":300}' and
 * BENCH_TURNS=30 change the model and the sample count; BENCH_TRACE=1 prints every call. Not part of `npm test`.
 */
export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      main: "./bench/latency/entry.ts",
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: { TEST_MIGRATIONS: await readD1Migrations("migrations"), OPERATOR_KEY: "bench-operator-key", CORS_ORIGINS: "" },
      },
    }),
  ],
  define: {
    __BENCH_LATENCY__: JSON.stringify(process.env.BENCH_LATENCY ?? "{}"),
    __BENCH_TURNS__: JSON.stringify(process.env.BENCH_TURNS ?? "30"),
    __BENCH_TRACE__: JSON.stringify(process.env.BENCH_TRACE === "1"),
  },
  test: {
    include: ["bench/latency/*.bench.ts"],
    setupFiles: ["./bench/latency/setup.ts"],
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
}));
