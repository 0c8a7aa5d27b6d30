import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { buildAssets } from "./scripts/build-assets";

// The worker serves /, /docs and /ui from the built static assets (dist/public).
await buildAssets();

export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations("migrations"),
          OPERATOR_KEY: "test-operator-key",
          EDGEWEAVE_OFFLINE: "1",
          ALLOW_PRIVATE_CALLBACKS: "1",
          CORS_ORIGINS: "https://app.example.com",
          OPENAI_API_KEY: "sk-test-openai",
          ANTHROPIC_API_KEY: "sk-ant-test",
          GROQ_API_KEY: "gsk-test",
          NVIDIA_API_KEY: "nvapi-test",
          // Lowered from production's 1.9 MB so tests exercise chunked LangGraph values.
          LANGGRAPH_CHUNK_BYTES: "65536",
          // Every turn's spans go to the fake collector of test/support/fake-otlp.ts.
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://otel.test/v1/traces",
          OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20cGstbGYtdGVzdDpzay1sZi10ZXN0",
          OTEL_CAPTURE_CONTENT_TENANTS: "t-trace-content",
        },
        d1Databases: {
          DB: "edgeweave-test",
          SCHEMA_CHECK_DB: "edgeweave-schema-check",
          MIGRATION_CHECK_DB: "edgeweave-migration-check",
          MARKS_MIGRATION_DB: "edgeweave-marks-migration",
        },
        // A batch is delivered as soon as it has a message, not after wrangler.toml's 1 s (5 s for the
        // dead-letter queue) of waiting for more: tests that wait for a task waited that out each time.
        queueConsumers: { "edgeweave-tasks": { maxBatchTimeout: 0 }, "edgeweave-tasks-dlq": { maxBatchTimeout: 0 } },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    // One workerd runtime per worker, reused file after file: starting one per file cost ~3 s each
    // (270 of 570 s for the suite). Storage is shared, so tests use their own tenants and threads
    // (test/support/tenants.ts) and must not leave background work running past their end.
    isolate: false,
    setupFiles: ["./test/setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
}));
