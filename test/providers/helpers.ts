import { ModelConfig, type ModelConfigInput } from "../../src/config/model-config";
import type { StreamEvent } from "../../src/providers/types";

/** A validated ModelConfig, as the router would hand it over (defaults for base_url and api_key_env filled in). */
export function model(
  name: string,
  provider: ModelConfigInput["provider"],
  provider_config: ModelConfigInput["provider_config"] = {},
  extra: Record<string, unknown> = {},
): ModelConfig {
  return ModelConfig.parse({ name, provider, provider_config, extra });
}

export async function drain<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** A stream's events as a non-Anthropic client sees them: an Anthropic upstream's block events (`anthropic`) left out, and the deltas that were only that. */
export function portable(events: StreamEvent[]): StreamEvent[] {
  return events.flatMap((e): StreamEvent[] => {
    if (e.type !== "delta" || !e.anthropic) return [e];
    const { anthropic: _, ...rest } = e;
    return Object.keys(rest).length > 1 ? [rest] : [];
  });
}

/** Runs `p` expecting a rejection and returns the error. */
export async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a failure, got success");
}

export async function* bytes(...parts: string[]): AsyncGenerator<Uint8Array> {
  const enc = new TextEncoder();
  for (const p of parts) yield enc.encode(p);
}
