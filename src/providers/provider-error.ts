import { AppError, type ErrorCode } from "../core/errors";
import { redact, rememberSecret } from "../core/log";

/**
 * What failover may do after an error:
 * - "retry": transient (429, 5xx, connection, bad stream) — retry this model, then the next;
 * - "failover": this model cannot answer now (timeout, missing key, unsupported content) — next model, no retry;
 * - "fatal": the request itself was rejected (401/403/400/404/422) — another model would not help.
 */
export type Disposition = "retry" | "failover" | "fatal";

export type ProviderErrorInfo = {
  disposition: Disposition;
  /** The upstream HTTP status, when there was one. */
  upstreamStatus?: number;
  /** The wait the upstream asked for (retry-after), in ms. */
  retryAfterMs?: number;
  /** Log-only detail (trimmed, secrets redacted); never sent to clients. */
  internal?: string;
  /** The upstream answered (HTTP 200) and so charges the call, though what it sent was unusable. */
  answered?: boolean;
};

/** A classified provider failure; still an AppError, so it shapes into the public error body. */
export class ProviderError extends AppError {
  readonly disposition: Disposition;
  readonly upstreamStatus?: number;
  readonly retryAfterMs?: number;
  readonly answered: boolean;

  constructor(code: ErrorCode, message: string, info: ProviderErrorInfo) {
    super(code, message, { internal: info.internal });
    this.answered = info.answered === true;
    this.disposition = info.disposition;
    this.upstreamStatus = info.upstreamStatus;
    this.retryAfterMs = info.retryAfterMs;
  }
}

export const isProviderError = (e: unknown): e is ProviderError => e instanceof ProviderError;

/** `retry-after` as seconds or an HTTP date (OpenAI also sends `retry-after-ms`); undefined when absent or unparsable. */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

const MAX_LOGGED_BODY = 500;

/** Trims an upstream text for logs and redacts credentials (the log redacts again when it writes). */
export function redactForLog(body: string, secret?: string): string {
  rememberSecret(secret);
  return redact(body.length > MAX_LOGGED_BODY ? `${body.slice(0, MAX_LOGGED_BODY)}…` : body);
}

/** Maps an upstream non-2xx answer to a classified error; the public message names only model and status. */
export function httpError(modelName: string, res: Response, body: string, secret: string | undefined): ProviderError {
  const status = res.status;
  const internal = `upstream ${status}: ${redactForLog(body, secret)}`;
  if (status === 429) {
    return new ProviderError("BEM-078", `Model '${modelName}': upstream rate limited the request (HTTP 429)`, {
      disposition: "retry",
      upstreamStatus: status,
      retryAfterMs: parseRetryAfter(res.headers),
      internal,
    });
  }
  // 408/409 are transient per the providers' own SDKs; 5xx includes Anthropic's 529 "overloaded".
  if (status >= 500 || status === 408 || status === 409) {
    return new ProviderError("BEM-071", `Model '${modelName}': upstream error (HTTP ${status})`, {
      disposition: "retry",
      upstreamStatus: status,
      retryAfterMs: parseRetryAfter(res.headers),
      internal,
    });
  }
  return new ProviderError("BEM-073", `Model '${modelName}': upstream rejected the request (HTTP ${status})`, {
    disposition: "fatal",
    upstreamStatus: status,
    internal,
  });
}

export const malformed = (modelName: string, what: string): ProviderError =>
  new ProviderError("BEM-071", `Model '${modelName}': upstream sent a malformed response`, { disposition: "retry", internal: what, answered: true });

export const streamCut = (modelName: string): ProviderError =>
  new ProviderError("BEM-074", `Model '${modelName}': upstream stream ended before completion`, { disposition: "retry" });

export const unsupported = (modelName: string, what: string): ProviderError =>
  new ProviderError("BEM-079", `Model '${modelName}' cannot take ${what}`, { disposition: "failover" });
