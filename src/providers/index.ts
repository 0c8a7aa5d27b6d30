/** The providers layer: call a configured model, stream it, fail over across candidates. */
export type { Adapter, Target, WireRequest } from "./adapter";
export { anthropicAdapter } from "./anthropic";
export { adapterFor, callModel, type ProviderContext, resolveTarget, streamModel } from "./call";
export {
  ANTHROPIC_VERSION,
  baseUrlFor,
  DEFAULT_BASE_URL,
  DEFAULT_KEY_ENV,
  DEFAULT_TIMEOUT_MS,
  isOfflineModel,
  keyEnvFor,
  OFFLINE_BASE_URL,
  timeoutFor,
  upstreamModelId,
} from "./defaults";
export {
  type Attempt,
  type AttemptOutcome,
  FailoverError,
  type FailoverOptions,
  type FailoverResult,
  isFailoverError,
  openStreamWithFailover,
  runWithFailover,
} from "./failover";
export { OFFLINE_LABEL, offlineReply, offlineResponder } from "./offline";
export { ollamaAdapter } from "./ollama";
export { openaiAdapter } from "./openai";
export { type Disposition, isProviderError, parseRetryAfter, ProviderError } from "./provider-error";
export { collectStream, StreamAccumulator } from "./stream-accumulator";
export * from "./types";
