import type { ModelConfig } from "../config/model-config";
import { DEFAULT_ANTHROPIC_MAX_TOKENS } from "./defaults";
import type { ChatRequest } from "./types";

/** OpenAI chat's sampling fields that OpenAI-compatible servers and Ollama take and Anthropic has no counterpart for. */
export const SAMPLING_FIELDS = ["seed", "frequency_penalty", "presence_penalty"] as const;

/** OpenAI's chat fields only OpenAI-compatible servers take; at Anthropic and Ollama they are named in the warnings (unless mapped below). */
export const OPENAI_ONLY_FIELDS = [
  "logit_bias",
  "prediction",
  "reasoning_effort",
  "verbosity",
  "service_tier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "safety_identifier",
] as const;

/** Every OpenAI field an OpenAI-compatible server is sent as given. */
export const OPENAI_FIELDS = [...SAMPLING_FIELDS, ...OPENAI_ONLY_FIELDS] as const;

export const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"] as const;

/** An effort as an Anthropic extended-thinking budget (Anthropic's minimum is 1,024 tokens). */
const THINKING_BUDGET: Record<string, number> = { minimal: 1024, low: 2048, medium: 8192, high: 16_384, xhigh: 32_768 };

type Params = Omit<ChatRequest, "messages">;

/**
 * A request's params as `m`'s provider takes them: at an Anthropic model that reasons (capability
 * `reasoning`), reasoning_effort becomes a thinking budget, with room for the answer after it when
 * the client set no max_tokens; `none` asks for no thinking, which is what Anthropic does unasked.
 * A client's own `thinking` wins. Elsewhere, or at a model that does not reason, the field stays
 * (sent to OpenAI-compatible servers, named in the warnings at the others).
 */
export function paramsFor(m: ModelConfig, params: Params | undefined): Params | undefined {
  const effort = params?.reasoning_effort;
  if (!params || effort === undefined || m.provider !== "anthropic" || params.anthropic?.thinking !== undefined) return params;
  const { reasoning_effort: _mapped, ...rest } = params;
  if (effort === "none") return rest;
  const budget = THINKING_BUDGET[effort];
  if (budget === undefined || !m.capabilities.includes("reasoning")) return params;
  const wanted = params.max_output_tokens ?? budget + DEFAULT_ANTHROPIC_MAX_TOKENS;
  return { ...rest, max_output_tokens: wanted, anthropic: { ...rest.anthropic, thinking: { type: "enabled", budget_tokens: budget } } };
}
