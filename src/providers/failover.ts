import { AppError, type ErrorCode, type ErrorOptions, isAppError } from "../core/errors";
import type { ModelConfig } from "../config/model-config";
import { isProviderError, type ProviderError, streamCut } from "./provider-error";
import { backoff } from "../core/backoff";

/**
 * Retries and failover across routed candidates:
 * - "retry" errors (429, 5xx, connection, cut stream) retry the same model with
 *   backoff, honouring retry-after up to `maxDelayMs`; a longer retry-after
 *   skips straight to the next candidate so a request never hangs;
 * - "failover" errors (timeout, missing secret, unsupported content, offline
 *   model disabled) go to the next candidate without retrying;
 * - "fatal" errors (upstream 4xx auth/validation) and any non-provider error stop at once.
 * When every candidate fails: all rate limited → BEM-076; all failed with one
 * and the same code (e.g. every one timed out → BEM-072) → that code; else BEM-075.
 */

export type AttemptOutcome = "ok" | "retry" | "failover" | "fatal";

/** One try of one model, as shown in the response's routing trace. */
export type Attempt = {
  model: string;
  /** ok; retry (same model again); failover (this model given up); fatal (the run stops). */
  outcome: AttemptOutcome;
  status?: number;
  error_code?: ErrorCode;
  /** The wait before the next try of the same model. */
  delay_ms?: number;
};

export type FailoverOptions = {
  /** Extra tries of one model on retryable errors (default 1: two tries per model). */
  maxRetriesPerModel?: number;
  /** First backoff step when the upstream gave no retry-after (default 200 ms, doubling, with jitter: src/core/backoff.ts). */
  baseDelayMs?: number;
  /** Longest wait before a retry (default 2000 ms). */
  maxDelayMs?: number;
  /** Injected in tests so nothing really waits. */
  sleep?: (ms: number) => Promise<void>;
  /** The jitter's random source (tests pass a constant). */
  random?: () => number;
};

export type FailoverResult<T> = { value: T; model: ModelConfig; attempts: Attempt[] };

/** The run's failure with every attempt attached (for the routing trace). */
export class FailoverError extends AppError {
  readonly attempts: Attempt[];

  constructor(code: ErrorCode, message: string, attempts: Attempt[], opts: ErrorOptions = {}) {
    super(code, message, opts);
    this.attempts = attempts;
  }
}

export const isFailoverError = (e: unknown): e is FailoverError => e instanceof FailoverError;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function recordFailure(model: string, outcome: AttemptOutcome, e: unknown, delay?: number): Attempt {
  const a: Attempt = { model, outcome };
  if (isProviderError(e) && e.upstreamStatus !== undefined) a.status = e.upstreamStatus;
  if (isAppError(e)) a.error_code = e.code;
  if (delay !== undefined) a.delay_ms = delay;
  return a;
}

function exhausted(failures: ProviderError[], attempts: Attempt[]): FailoverError {
  const codes = new Set(failures.map((f) => f.code));
  const messages = [...new Set(failures.map((f) => f.message))].join("; ");
  const internal =
    failures
      .map((f) => f.internal)
      .filter(Boolean)
      .join(" | ") || undefined;
  if (codes.size === 1 && codes.has("BEM-078")) {
    const waits = failures.map((f) => f.retryAfterMs).filter((ms): ms is number => ms !== undefined);
    const headers = waits.length > 0 ? { "retry-after": String(Math.max(1, Math.ceil(Math.min(...waits) / 1000))) } : undefined;
    return new FailoverError("BEM-076", `Every candidate model is rate limited: ${messages}`, attempts, { internal, headers });
  }
  const only = failures[0];
  if (codes.size === 1 && only && only.code !== "BEM-071") return new FailoverError(only.code, messages, attempts, { internal });
  return new FailoverError("BEM-075", `Every routed candidate failed: ${messages}`, attempts, { internal });
}

/** Runs `attempt` on the candidates in order until one succeeds (see the rules above). */
export async function runWithFailover<T>(
  candidates: readonly ModelConfig[],
  attempt: (model: ModelConfig) => Promise<T>,
  opts: FailoverOptions = {},
): Promise<FailoverResult<T>> {
  const maxRetries = opts.maxRetriesPerModel ?? 1;
  const baseDelay = opts.baseDelayMs ?? 200;
  const maxDelay = opts.maxDelayMs ?? 2000;
  const sleep = opts.sleep ?? defaultSleep;
  const attempts: Attempt[] = [];
  const failures: ProviderError[] = [];
  if (candidates.length === 0) throw new FailoverError("BEM-075", "No candidate model to call", attempts);

  for (const model of candidates) {
    for (let retry = 0; ; retry++) {
      try {
        const value = await attempt(model);
        attempts.push({ model: model.name, outcome: "ok" });
        return { value, model, attempts };
      } catch (e) {
        if (!isProviderError(e) || e.disposition === "fatal") {
          attempts.push(recordFailure(model.name, "fatal", e));
          if (isAppError(e)) throw new FailoverError(e.code, e.message, attempts, { internal: e.internal, headers: e.headers, details: e.details });
          throw e; // not a provider failure (a bug, or the caller aborted): never retried
        }
        const asked = e.retryAfterMs;
        const canRetry = e.disposition === "retry" && retry < maxRetries && (asked === undefined || asked <= maxDelay);
        if (!canRetry) {
          failures.push(e);
          attempts.push(recordFailure(model.name, "failover", e));
          break;
        }
        const delay = asked ?? backoff(retry, { base: baseDelay, max: maxDelay, random: opts.random });
        attempts.push(recordFailure(model.name, "retry", e, delay));
        await sleep(delay);
      }
    }
  }
  throw exhausted(failures, attempts);
}

/**
 * Opens a stream with failover before its first event: each candidate's stream
 * is read up to its first event; only then is that candidate committed to.
 * Errors after the first event are thrown to the consumer (no failover, the
 * client has seen output). The consumer must drain `value` or call its return().
 */
export async function openStreamWithFailover<E>(
  candidates: readonly ModelConfig[],
  open: (model: ModelConfig) => AsyncIterable<E>,
  opts: FailoverOptions = {},
): Promise<FailoverResult<AsyncGenerator<E>>> {
  const opened = await runWithFailover(
    candidates,
    async (model) => {
      const it = open(model)[Symbol.asyncIterator]();
      let first: IteratorResult<E>;
      try {
        first = await it.next();
      } catch (e) {
        await it.return?.()?.catch(() => undefined);
        throw e;
      }
      if (first.done) throw streamCut(model.name);
      return { it, first: first.value };
    },
    opts,
  );
  const { it, first } = opened.value;
  async function* events(): AsyncGenerator<E> {
    try {
      yield first;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      // Releases the upstream body when the consumer stops early.
      await it.return?.()?.catch(() => undefined);
    }
  }
  return { value: events(), model: opened.model, attempts: opened.attempts };
}
