import { callbackHeaders } from "./signature";
import { backoff } from "../core/backoff";

/** What a callback receiver gets: signed with the hook's secret in the callback scheme (v2, src/webhooks/signature.ts). */
export type CallbackPayload = { webhook_id: string; delivery_id: string; thread_id: string; reply: string; model: string };

export type CallbackOutcome =
  | { status: "sent"; http_status: number; attempts: number }
  /** The receiver answered 4xx (other than 408/429): retrying would not help. */
  | { status: "rejected"; http_status: number; attempts: number };

export class CallbackFailed extends Error {
  override readonly name = "CallbackFailed";
}

export type CallbackOptions = {
  attempts?: number;
  /** First backoff; doubles each attempt (src/core/backoff.ts). */
  baseDelayMs?: number;
  timeoutMs?: number;
  fetch?: typeof fetch;
  now?: () => number;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const retryable = (status: number) => status >= 500 || status === 408 || status === 429;

/**
 * POSTs the reply with bounded retries (default 3 attempts, about 250 ms then 500 ms apart; see backoff).
 * Redirects are not followed (a redirect could point anywhere). Throws
 * CallbackFailed when every attempt failed transiently, so the task is retried
 * by the queue; the turn itself is not run again (the delivery row says so).
 */
export async function sendCallback(url: string, secret: string, payload: CallbackPayload, opts: CallbackOptions = {}): Promise<CallbackOutcome> {
  const body = JSON.stringify(payload);
  return postSigned(url, body, (now) => callbackHeaders(secret, body, now), opts);
}

/** POSTs `body` signed by `sign` (fresh at each attempt), with the callbacks' retries; CallbackFailed when every attempt failed transiently. */
export async function postSigned(
  url: string,
  body: string,
  sign: (now: number) => Promise<Record<string, string>>,
  opts: CallbackOptions = {},
): Promise<CallbackOutcome> {
  const attempts = opts.attempts ?? 3;
  const doFetch = opts.fetch ?? fetch;
  let last = "no attempt";
  for (let i = 1; i <= attempts; i++) {
    if (i > 1) await sleep(backoff(i - 2, { base: opts.baseDelayMs ?? 250, max: 30_000 }));
    try {
      const headers = { "content-type": "application/json", ...(await sign((opts.now ?? Date.now)())) };
      const res = await doFetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000) });
      await res.body?.cancel();
      if (res.status >= 200 && res.status < 300) return { status: "sent", http_status: res.status, attempts: i };
      if (!retryable(res.status)) return { status: "rejected", http_status: res.status, attempts: i };
      last = `HTTP ${res.status}`;
    } catch (e) {
      last = e instanceof Error ? e.name : "network error";
    }
  }
  throw new CallbackFailed(`callback failed after ${attempts} attempts (last: ${last})`);
}
