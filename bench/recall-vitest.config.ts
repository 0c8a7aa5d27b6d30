import { resolve } from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { loadConversations, locomoDir } from "./locomo/data.ts";

/**
 * Recall over LoCoMo turns (bench/recall-locomo.bench.ts: inside the object; bench/recall-turn.bench.ts: whole turns), in workerd
 * with real Durable Object SQLite: npx vitest run -c bench/recall-vitest.config.ts
 * The conversations are read here (Node) from LOCOMO_DIR and handed to the bench as a binding.
 */

const convs = loadConversations(locomoDir(resolve(import.meta.dirname, ".."))).map((c) => {
  const asked = c.questions.filter((q) => q.category >= 1 && q.category <= 4);
  return {
    id: c.id,
    turns: c.turns.map((t) => ({ role: t.speaker === c.speakerA ? "user" : "assistant", content: `${t.speaker}: ${t.text}`, created_at: t.at })),
    questions: asked.map((q) => q.question),
    // For bench/recall-tune.bench.ts: each turn's dia id, and each question's category and evidence (dia ids).
    dias: c.turns.map((t) => t.dia),
    qa: asked.map((q) => ({ question: q.question, category: q.category, evidence: q.evidence })),
  };
});

export default defineConfig(async () => ({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          MAX_THREAD_BYTES: String(64 * 1024 * 1024),
          LOCOMO: JSON.stringify(convs),
          TEST_MIGRATIONS: await readD1Migrations("migrations"),
          OPERATOR_KEY: "test-operator-key",
          EDGEWEAVE_OFFLINE: "1",
        },
      },
    }),
  ],
  test: {
    include: ["bench/recall-*.bench.ts"],
    // One bench at a time: two files timed side by side on a shared machine would slow each other.
    fileParallelism: false,
    setupFiles: ["./bench/recall-setup.ts"],
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
}));
