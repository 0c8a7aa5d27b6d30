import type { AppError, ErrorCode } from "../core/errors";

/**
 * Our errors in Anthropic's shape, for Messages API clients:
 * `{"type":"error","error":{"type":"not_found_error","message":"…","bem_code":"BEM-105"}}`.
 * The type follows the status (docs/guides/anthropic-and-claude-code.md "Errors in Anthropic's shape" has the table). Statuses
 * Anthropic has no type for keep their status with the closest type. A configuration error is
 * never answered with a status the SDK retries (408, 409, 429, 5xx): it would only repeat.
 */
export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "billing_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "timeout_error"
  | "overloaded_error";

const BY_STATUS: Record<number, AnthropicErrorType> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  409: "invalid_request_error",
  413: "request_too_large",
  415: "invalid_request_error",
  422: "invalid_request_error",
  424: "api_error",
  429: "rate_limit_error",
  500: "api_error",
  502: "api_error",
  503: "overloaded_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/**
 * Configuration errors (the deployment, not the request or the moment, is wrong): the model file,
 * a provider secret that is not set, an upstream that refuses our key. Answered with 424, which
 * Anthropic's SDKs (and Claude Code) do not retry.
 */
const CONFIGURATION: ReadonlySet<ErrorCode> = new Set(["BEM-042", "BEM-043", "BEM-044", "BEM-045", "BEM-048", "BEM-070", "BEM-073"]);
const RETRIED = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

export function anthropicError(e: Pick<AppError, "code" | "status" | "message" | "details">): {
  status: number;
  body: { type: "error"; error: { type: AnthropicErrorType; message: string; bem_code: string } & Record<string, unknown> };
} {
  const status = CONFIGURATION.has(e.code) && RETRIED(e.status) ? 424 : e.status;
  const type = BY_STATUS[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  return { status, body: { type: "error", error: { ...e.details, type, message: e.message, bem_code: e.code } } };
}

/** Requests answered in Anthropic's error shape: the Messages routes, and model discovery from Anthropic clients. */
export function speaksAnthropic(path: string, anthropicVersion: string | undefined): boolean {
  return (
    path === "/v1/messages" || path.startsWith("/v1/messages/") || (anthropicVersion !== undefined && (path === "/v1/models" || path.startsWith("/v1/models/")))
  );
}
