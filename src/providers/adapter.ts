import type { Provider } from "../config/model-config";
import type { ChatRequest, ChatResult, StreamEvent } from "./types";

/** Everything an adapter needs to address one model; resolved from ModelConfig + env. */
export type Target = {
  /** The configured model name (used in error messages). */
  name: string;
  provider: Provider;
  /** The model id sent upstream. */
  upstreamModel: string;
  baseUrl: string;
  apiKey?: string;
};

/** A request ready to send: pure data, so tests can assert it exactly. */
export type WireRequest = { url: string; headers: Record<string, string>; body: Record<string, unknown> };

/** One wire format: a pure request builder, a response parser and a stream parser. */
export interface Adapter {
  buildRequest(target: Target, req: ChatRequest, stream: boolean): WireRequest;
  parseResponse(json: unknown, target: Target): ChatResult;
  /** Yields deltas then exactly one `done`; throws BEM-074 when the completion marker never came. */
  parseStream(chunks: AsyncIterable<Uint8Array>, target: Target): AsyncGenerator<StreamEvent>;
}

export const joinUrl = (base: string, path: string): string => `${base.replace(/\/+$/, "")}${path}`;

/** Parses a JSON string, returning undefined instead of throwing. */
export function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
