/**
 * The one error catalog. Every error a client can see has a BEM code, a status
 * and a meaning here; nothing else reaches a response body.
 */
export const catalog = {
  "BEM-001": { status: 500, meaning: "Internal error (details are logged, never returned)" },
  "BEM-002": { status: 404, meaning: "No such route" },
  "BEM-003": { status: 405, meaning: "Method not allowed on this route" },
  "BEM-010": { status: 400, meaning: "Body is not valid JSON" },
  "BEM-011": { status: 400, meaning: "Request failed validation" },
  "BEM-012": { status: 415, meaning: "Unsupported content type (send application/json)" },
  "BEM-013": { status: 413, meaning: "Request body too large" },
  "BEM-014": { status: 400, meaning: "JSON nested too deeply or too long" },
  "BEM-015": { status: 413, meaning: "Tenant holds the maximum number of live API keys (MAX_KEYS_PER_TENANT)" },
  "BEM-016": { status: 413, meaning: "Tenant holds the maximum number of webhooks (MAX_WEBHOOKS_PER_TENANT)" },
  "BEM-017": { status: 413, meaning: "Tenant holds the maximum number of threads (MAX_THREADS_PER_TENANT)" },
  "BEM-018": { status: 413, meaning: "Tenant holds the maximum number of facts (MAX_FACTS_PER_TENANT)" },
  "BEM-019": { status: 413, meaning: "Thread history holds the maximum number of bytes (MAX_THREAD_HISTORY_BYTES)" },

  "BEM-020": { status: 401, meaning: "Missing API key" },
  "BEM-021": { status: 401, meaning: "Invalid or revoked API key" },
  "BEM-022": { status: 403, meaning: "The key's role does not allow this" },
  "BEM-023": { status: 403, meaning: "Memory scope outside the key's grants" },
  "BEM-024": { status: 429, meaning: "Rate limit exceeded for this key" },
  "BEM-025": { status: 403, meaning: "Thread outside the key's grants (needs a grant matching session:<thread>)" },

  "BEM-030": { status: 400, meaning: "Invalid thread id" },
  "BEM-031": { status: 404, meaning: "Message id not found in the thread" },
  "BEM-032": { status: 404, meaning: "Checkpoint not found in the thread" },
  "BEM-033": { status: 413, meaning: "Message or channel value larger than the configured limit" },
  "BEM-034": { status: 413, meaning: "Thread holds the maximum number of messages" },
  "BEM-035": { status: 400, meaning: "Invalid state update operation" },
  "BEM-036": { status: 404, meaning: "Thread not found" },
  "BEM-037": { status: 400, meaning: "Channel already declared with a different reducer" },
  "BEM-038": { status: 409, meaning: "Thread is busy with another run" },

  "BEM-041": { status: 422, meaning: "No model satisfies the request and no default model is set" },
  "BEM-042": { status: 500, meaning: "Duplicate model or strategy name" },
  "BEM-043": { status: 500, meaning: "Model file unreadable" },
  "BEM-044": { status: 500, meaning: "Model file invalid (YAML or schema)" },
  "BEM-045": { status: 500, meaning: "Model file names an unknown model (default_model or agent)" },
  "BEM-046": { status: 400, meaning: "model_override breaks a hard requirement of the request" },
  "BEM-047": { status: 404, meaning: "Unknown agent" },
  "BEM-048": { status: 500, meaning: "Model file contains a literal API key" },
  "BEM-049": { status: 404, meaning: "Unknown model name" },

  "BEM-050": { status: 409, meaning: "Tenant already exists" },
  "BEM-051": { status: 404, meaning: "Tenant not found" },
  "BEM-052": { status: 404, meaning: "API key not found" },

  "BEM-060": { status: 400, meaning: "Invalid memory scope" },
  "BEM-061": { status: 404, meaning: "Fact not found" },
  "BEM-062": { status: 413, meaning: "Fact text too large" },
  "BEM-063": { status: 400, meaning: "Invalid fact kind" },
  "BEM-064": { status: 400, meaning: "Fact text is empty" },
  "BEM-065": { status: 503, meaning: "Long-term memory is unavailable right now; nothing was run or stored" },

  "BEM-140": { status: 400, meaning: "Invalid fact key" },
  "BEM-141": { status: 400, meaning: "Invalid fact expiry (expires_at / ttl_seconds)" },
  "BEM-142": { status: 400, meaning: "Invalid memory search (query or filters)" },
  "BEM-143": { status: 400, meaning: "Invalid memory tool call (scope, id or key)" },
  "BEM-144": { status: 422, meaning: "Fact extraction output rejected (malformed, over limits, or outside the key's grants); nothing stored" },

  "BEM-070": { status: 424, meaning: "Provider API key secret is not set (a configuration error: 424, which SDKs do not retry)" },
  "BEM-071": { status: 502, meaning: "Upstream provider error" },
  "BEM-072": { status: 504, meaning: "Upstream provider timed out" },
  "BEM-073": {
    status: 424,
    meaning: "Upstream provider refused our key or the request (a 4xx other than 408/409/429; a configuration error: 424, which SDKs do not retry)",
  },
  "BEM-074": { status: 502, meaning: "Upstream stream ended before completion" },
  "BEM-075": { status: 502, meaning: "Every routed candidate failed" },
  "BEM-076": { status: 429, meaning: "Upstream provider rate limited every candidate" },
  "BEM-077": { status: 403, meaning: "Offline model is disabled in this deployment" },
  "BEM-078": { status: 429, meaning: "Upstream provider rate limited the request" },
  "BEM-079": { status: 422, meaning: "The model's provider cannot take part of this request (e.g. audio, or an image URL it cannot fetch)" },

  "BEM-080": { status: 400, meaning: "Tool call failed or named an unknown tool" },
  "BEM-081": { status: 422, meaning: "remaining_steps exhausted before the run finished" },
  "BEM-082": { status: 409, meaning: "Conflicting last-value writes to one channel in one step" },
  "BEM-083": { status: 400, meaning: "Run context failed the agent's context schema" },
  "BEM-084": { status: 400, meaning: "Invalid middleware configuration" },

  "BEM-090": { status: 401, meaning: "Webhook signature missing or invalid" },
  "BEM-091": { status: 401, meaning: "Webhook timestamp outside the replay window" },
  "BEM-092": { status: 400, meaning: "Malformed background task" },
  "BEM-093": { status: 404, meaning: "Webhook not found" },
  "BEM-094": { status: 400, meaning: "Callback URL not allowed" },
  "BEM-095": { status: 422, meaning: "Webhook payload lacks the configured thread or text field" },

  "BEM-100": { status: 404, meaning: "Response not found (or not stored)" },
  "BEM-101": { status: 400, meaning: "function_call_output names a call_id that no earlier function_call made" },
  "BEM-102": { status: 404, meaning: "Conversation not found" },
  "BEM-103": { status: 400, meaning: "Responses input cannot be used as given (e.g. both previous_response_id and conversation)" },
  "BEM-104": { status: 404, meaning: "Conversation item not found" },
  "BEM-105": { status: 404, meaning: "The model does not exist (OpenAI code model_not_found); the message names the closest configured models" },
  "BEM-106": { status: 422, meaning: "Idempotency-Key reused with a different request body" },
  "BEM-107": { status: 409, meaning: "A request with this Idempotency-Key is still running" },
  "BEM-108": { status: 400, meaning: "Invalid Idempotency-Key (1-255 printable characters)" },
  "BEM-109": { status: 400, meaning: "Every resent message is already in the thread: nothing new to answer" },
  "BEM-110": { status: 404, meaning: "An item_reference names no output item of a response stored on a thread the key reaches" },
  "BEM-111": { status: 400, meaning: "Conversation items cannot be system or developer messages: instructions are per call, never stored" },
  "BEM-112": {
    status: 400,
    meaning: "The conversation does not fit the model's context window and truncation is disabled (send truncation: auto to drop its oldest turns)",
  },
  "BEM-130": { status: 400, meaning: "The body's thread_id and the X-Thread-Id header name different threads" },
  "BEM-131": {
    status: 422,
    meaning:
      "The request with this Idempotency-Key ran, but its response could not be kept for replay (too large, or past MAX_IDEMPOTENCY_BYTES_PER_TENANT or MAX_IDEMPOTENCY_BYTES_PER_KEY); it is not run again (use a new key)",
  },

  "BEM-132": {
    status: 400,
    meaning: "A cross-thread LangGraph list without threads_after reaches more threads than one request visits (100): page by threads_after",
  },
  "BEM-133": {
    status: 413,
    meaning:
      "LangGraph store request's reads return more bytes of values and namespaces than one response carries (MAX_STORE_READ_BYTES, shared by its reads); nothing stored",
  },

  "BEM-120": { status: 400, meaning: "Invalid LangGraph store namespace or key" },
  "BEM-121": { status: 413, meaning: "Tenant holds the maximum number of LangGraph store items (MAX_STORE_ITEMS_PER_TENANT)" },
  "BEM-190": { status: 413, meaning: "Tenant holds the maximum bytes of LangGraph store items (MAX_STORE_BYTES_PER_TENANT)" },
  "BEM-146": { status: 400, meaning: "Invalid LangGraph store filter (operator, value, or too many conditions)" },
  "BEM-145": { status: 413, meaning: "LangGraph delta-channel history larger than one response carries (prune, or snapshot more often)" },
  "BEM-147": { status: 413, meaning: "LangGraph checkpoint's channel versions larger than one stored row holds (MAX_VERSIONS_BYTES)" },
  "BEM-148": {
    status: 400,
    meaning: "LangGraph checkpoint's metadata names more delta channels than a graph has (MAX_DELTA_CHANNELS, 64) or a longer name than MAX_CHANNEL_NAME",
  },

  "BEM-160": { status: 400, meaning: "Invalid X-Edgeweave-Bookmark header (send back a bookmark edgeweave returned)" },
  "BEM-161": { status: 422, meaning: "Webhook scopes reach no thread (add a session: grant, e.g. session:ticket-*)" },

  "BEM-170": { status: 401, meaning: "Two different API keys in Authorization and x-api-key" },
  "BEM-171": { status: 503, meaning: "The thread could not be deleted now (D1 did not take its usage or list removal); nothing was deleted, retry" },

  "BEM-230": { status: 402, meaning: "A spend budget has no room for this model call's most possible cost; nothing was sent upstream" },
  "BEM-231": { status: 404, meaning: "Budget not found" },
  "BEM-232": { status: 413, meaning: "Tenant holds the maximum number of budgets (100)" },
  "BEM-220": { status: 422, meaning: "The model asked for more tool calls in one reply than a message holds (128); none of them ran" },
  "BEM-200": { status: 404, meaning: "Run not found on the thread (LangGraph API)" },
  "BEM-201": { status: 409, meaning: "Thread already exists (LangGraph API: POST /threads with if_exists raise, the default)" },
  "BEM-202": { status: 400, meaning: "A LangGraph API option edgeweave does not serve (the message names it and what is served)" },
  "BEM-203": { status: 409, meaning: "The run has finished: nothing to cancel (LangGraph API)" },
  "BEM-204": { status: 409, meaning: "The run was cancelled before its end; nothing of it was saved (LangGraph API cancel, or multitask_strategy interrupt)" },
  "BEM-096": { status: 400, meaning: "Tool message answers no open tool call" },
  "BEM-097": { status: 413, meaning: "Thread holds the maximum number of bytes (MAX_THREAD_BYTES)" },
  "BEM-098": { status: 503, meaning: "Thread storage failed; nothing was run or stored" },
  "BEM-099": { status: 429, meaning: "Too many attempts with unknown API keys from this address" },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof catalog;

/** An error with a public code and message; `internal` is for logs only. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly internal?: string;
  readonly headers?: Record<string, string>;
  /** Public fields beside code and message, for a client to act on (a refused budget's id and reset time). */
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message?: string, opts: ErrorOptions = {}) {
    super(message ?? catalog[code].meaning);
    this.name = "AppError";
    this.code = code;
    this.status = catalog[code].status;
    this.internal = opts.internal;
    this.headers = opts.headers;
    this.details = opts.details;
  }

  toJSON(): ErrorBody {
    return { error: { ...this.details, code: this.code, message: this.message } };
  }
}

export type ErrorOptions = { internal?: string; headers?: Record<string, string>; details?: Record<string, unknown> };

export type ErrorBody = { error: { code: ErrorCode; message: string } & Record<string, unknown> };

export function fail(code: ErrorCode, message?: string, opts?: ErrorOptions): never {
  throw new AppError(code, message, opts);
}

export function isAppError(e: unknown): e is AppError {
  return (
    e instanceof AppError ||
    (typeof e === "object" &&
      e !== null &&
      (e as { name?: unknown }).name === "AppError" &&
      typeof (e as { code?: unknown }).code === "string" &&
      (e as { code: string }).code in catalog)
  );
}
