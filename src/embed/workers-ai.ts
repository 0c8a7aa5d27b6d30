import { z } from "@hono/zod-openapi";
import type { EmbedderConfig } from "../config/embedder-config";
import { EmbedFailure, type Embedder } from "./embedder";
import { remoteEmbedder } from "./remote";

/** What the `AI` binding's run is called with and answers for a text-embedding model (@cf/baai/bge-*): `{ shape, data }`. */
export type AiRunner = { run(model: string, input: { text: string[] }): Promise<unknown> };

const AiEmbeddings = z.object({ shape: z.array(z.number()).optional(), data: z.array(z.array(z.number())) });

/** The deployment's `AI` binding, when its environment has one (never the config `npm start` and the tests use). */
export function aiBinding(env: object): AiRunner | undefined {
  const ai: unknown = Reflect.get(env, "AI");
  return isRunner(ai) ? ai : undefined;
}

const isRunner = (v: unknown): v is AiRunner => typeof v === "object" && v !== null && typeof Reflect.get(v, "run") === "function";

/** Workers AI through the `AI` binding; without one, every call fails as "unavailable" (recall then runs on words). */
export function workersAiEmbedder(config: EmbedderConfig, ai: AiRunner | undefined): Embedder {
  return remoteEmbedder(config, async (texts) => {
    if (!ai) throw new EmbedFailure(config.name, "unavailable", "no AI binding in this environment (see docs/concepts/recall-by-meaning.md)");
    const answer = AiEmbeddings.safeParse(await ai.run(config.model, { text: texts }));
    if (!answer.success) throw new EmbedFailure(config.name, "failed", "the AI binding's answer is not { data: number[][] }");
    return { vectors: answer.data.data };
  });
}
