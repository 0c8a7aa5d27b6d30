import { z } from "@hono/zod-openapi";
import type { EmbedderConfig } from "../config/embedder-config";
import { EmbedFailure, type Embedder } from "./embedder";
import { remoteEmbedder } from "./remote";

const EmbeddingsAnswer = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
  usage: z.object({ prompt_tokens: z.number().int().min(0) }).optional(),
});

/** Any OpenAI-compatible `POST {base_url}/embeddings` (OpenAI, Voyage, Ollama, one's own), its key read from the secret `api_key_env` names. */
export function openAiEmbedder(config: Extract<EmbedderConfig, { provider: "openai" }>, key: string | undefined): Embedder {
  return remoteEmbedder(config, async (texts, signal) => {
    if (config.api_key_env !== undefined && !key) throw new EmbedFailure(config.name, "unavailable", `secret ${config.api_key_env} is not set`);
    const res = await fetch(`${config.base_url.replace(/\/+$/, "")}/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify({ model: config.model, input: texts, encoding_format: "float" }),
      signal,
    });
    if (!res.ok) throw new EmbedFailure(config.name, "failed", `HTTP ${res.status}`);
    const answer = EmbeddingsAnswer.safeParse(await res.json().catch(() => null));
    if (!answer.success) throw new EmbedFailure(config.name, "failed", "the answer is not an embeddings list");
    // Ordered by index, as the request's inputs were.
    const vectors = [...answer.data.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    return { vectors, ...(answer.data.usage ? { tokens: answer.data.usage.prompt_tokens } : {}) };
  });
}
