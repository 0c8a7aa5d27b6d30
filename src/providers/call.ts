import { isAppError } from "../core/errors";
import type { ModelConfig, Provider } from "../config/model-config";
import type { Adapter, Target } from "./adapter";
import { tryJson } from "./adapter";
import { anthropicAdapter } from "./anthropic";
import { Deadline } from "./deadline";
import { baseUrlFor, isOfflineModel, keyEnvFor, timeoutFor, upstreamModelId } from "./defaults";
import { offlineResponder } from "./offline";
import { ollamaAdapter } from "./ollama";
import { openaiAdapter } from "./openai";
import { portableRequest } from "./portable";
import { httpError, malformed, ProviderError, streamCut } from "./provider-error";
import type { ChatRequest, ChatResult, StreamEvent } from "./types";
import { rememberSecret } from "../core/log";

/** What a provider call needs from its surroundings. `env` holds the secrets (the worker's Env). */
export type ProviderContext = {
  env: object;
  /** Defaults to the global fetch; tests and the offline model substitute it. */
  fetch?: typeof fetch;
  /** The caller's abort (e.g. the client went away before anything was produced). */
  signal?: AbortSignal;
};

const ADAPTERS: Readonly<Record<Provider, Adapter>> = {
  openai: openaiAdapter,
  groq: openaiAdapter,
  nvidia: openaiAdapter,
  custom: openaiAdapter,
  anthropic: anthropicAdapter,
  ollama: ollamaAdapter,
};

export const adapterFor = (provider: Provider): Adapter => ADAPTERS[provider];

const readEnv = (env: object, name: string): unknown => Reflect.get(env, name);

/** Resolves where and how to call `model`; throws BEM-077 (offline disabled) or BEM-070 (missing secret, by name). */
export function resolveTarget(model: ModelConfig, env: object): Target {
  if (isOfflineModel(model) && readEnv(env, "EDGEWEAVE_OFFLINE") !== "1") {
    throw new ProviderError(
      "BEM-077",
      `Model '${model.name}' is the offline echo model, which is disabled here (set EDGEWEAVE_OFFLINE=1 for local development)`,
      {
        disposition: "failover",
      },
    );
  }
  const baseUrl = baseUrlFor(model);
  if (baseUrl === undefined) {
    throw new ProviderError("BEM-071", `Model '${model.name}' has no provider_config.base_url`, { disposition: "failover" });
  }
  const target: Target = { name: model.name, provider: model.provider, upstreamModel: upstreamModelId(model), baseUrl };
  const keyEnv = keyEnvFor(model);
  if (keyEnv !== undefined) {
    const key = readEnv(env, keyEnv);
    if (typeof key !== "string" || key === "") {
      // The client's own key (often an env var of the same name, as Claude Code's ANTHROPIC_API_KEY) only reaches edgeweave.
      throw new ProviderError(
        "BEM-070",
        `Model '${model.name}' needs the server secret ${keyEnv}, which is not set on this gateway: set it with \`wrangler secret put ${keyEnv}\` (locally in .dev.vars); a client's own ${keyEnv} is its edgeweave key and never reaches the provider`,
        { disposition: "failover" },
      );
    }
    target.apiKey = key;
    rememberSecret(key); // whatever an upstream echoes back, this value never reaches a log line
  }
  return target;
}

function transportError(e: unknown, deadline: Deadline, ctx: ProviderContext, target: Target): unknown {
  if (isAppError(e)) return e;
  if (deadline.timedOut) {
    return new ProviderError("BEM-072", `Model '${target.name}': upstream timed out after ${deadline.ms} ms`, { disposition: "failover" });
  }
  // The caller went away: not a provider failure, so not a reason to fail over.
  if (ctx.signal?.aborted) return ctx.signal.reason ?? e;
  return new ProviderError("BEM-071", `Model '${target.name}': could not reach the upstream`, {
    disposition: "retry",
    internal: e instanceof Error ? e.message : String(e),
  });
}

type Sent = { target: Target; adapter: Adapter; res: Response };

async function send(model: ModelConfig, req: ChatRequest, ctx: ProviderContext, stream: boolean, deadline: Deadline): Promise<Sent> {
  const target = resolveTarget(model, ctx.env);
  const adapter = adapterFor(model.provider);
  // Anthropic-only content (Messages API clients) reaches Anthropic unchanged; others get what they can take.
  const wire = adapter.buildRequest(target, model.provider === "anthropic" ? req : portableRequest(req, target), stream);
  const doFetch: typeof fetch = isOfflineModel(model) ? (input, init) => offlineResponder(new Request(input, init)) : (ctx.fetch ?? fetch);
  let res: Response;
  try {
    res = await deadline.race(doFetch(wire.url, { method: "POST", headers: wire.headers, body: JSON.stringify(wire.body), signal: deadline.signal }));
  } catch (e) {
    throw transportError(e, deadline, ctx, target);
  }
  if (!res.ok) {
    const body = await deadline.race(res.text()).catch(() => "");
    throw httpError(target.name, res, body, target.apiKey);
  }
  return { target, adapter, res };
}

/** One non-streaming call to `model`; failures are classified ProviderErrors (see Disposition). */
export async function callModel(model: ModelConfig, req: ChatRequest, ctx: ProviderContext): Promise<ChatResult> {
  const deadline = new Deadline(timeoutFor(model), ctx.signal);
  const { target, adapter, res } = await send(model, req, ctx, false, deadline);
  let text: string;
  try {
    text = await deadline.race(res.text());
  } catch (e) {
    throw transportError(e, deadline, ctx, target);
  }
  const json = tryJson(text);
  if (json === undefined) throw malformed(target.name, `not JSON: ${text.slice(0, 200)}`);
  return adapter.parseResponse(json, target);
}

/**
 * One streaming call to `model`: deltas, then exactly one `done`. Throws BEM-074
 * if the upstream ends without its completion marker, BEM-072 if it stalls
 * longer than the model's timeout while we wait for the next chunk.
 */
export async function* streamModel(model: ModelConfig, req: ChatRequest, ctx: ProviderContext): AsyncGenerator<StreamEvent> {
  const deadline = new Deadline(timeoutFor(model), ctx.signal);
  const { target, adapter, res } = await send(model, req, ctx, true, deadline);
  if (!res.body) throw streamCut(target.name);
  const reader = res.body.getReader();
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await deadline.race(reader.read());
      } catch (e) {
        throw transportError(e, deadline, ctx, target);
      }
      if (r.done) return;
      yield r.value;
    }
  }
  try {
    yield* adapter.parseStream(chunks(), target);
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
