import { createMiddleware } from "hono/factory";
import { AppError } from "../core/errors";
import type { AppEnv } from "./app-env";
import {
  claim,
  complete,
  completeUnkept,
  MAX_KEPT_BYTES,
  pruneExpired,
  release,
  renew,
  scopedKey,
  keptBudget,
  type KeptBudget,
  type Stored,
  type Unkept,
  utf8Bytes,
} from "../idempotency/store";

const KEY = /^[\x21-\x7e]{1,255}$/;
/**
 * How long a claim holds the key without a renewal. The holder renews it every third of that
 * while it runs (streams until recorded), so a holder that died (a crashed isolate, kill -9)
 * loses the key within this bound and a waiting duplicate takes over and runs.
 */
export const IDEMPOTENCY_LEASE_MS = 10_000;
const RENEW_MS = Math.floor(IDEMPOTENCY_LEASE_MS / 3);
/** How long a duplicate waits for the first to finish before 409 BEM-107 (the thread lease's bound). */
const WAIT_MS = 30_000;
/**
 * How often a waiting duplicate checks the claim: from 50 ms, doubling to at most 1 s. Each check is a write
 * statement on D1's primary and a read, and the duplicate was charged once: checked every 50 ms, it made ~600
 * of them over its wait, so a key's allowance of duplicates put ~1,200 times as many statements on the
 * database every tenant shares. A finished holder is seen at most a second late.
 */
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 1_000;
/**
 * Results a retry may change are not kept: the key is released for the next attempt. A 424 is a
 * configuration error (a provider secret unset, an upstream refusing our key): the operator's fix
 * makes the same request succeed, which a kept 424 would deny for 24 h.
 */
const retryable = (status: number) => status >= 500 || status === 409 || status === 429 || status === 408 || status === 424;
/**
 * Completion markers of our streams: chat `[DONE]`, Responses `response.completed` (or `response.incomplete`: it
 * ended too), Anthropic Messages `message_stop`, invoke `done`. A stream without one is not kept (a retry runs).
 */
const STREAM_DONE = /^(data: \[DONE\]|event: response\.(completed|incomplete)|event: message_stop|event: done)$/m;
/**
 * Request headers that select what a request does, so they are part of it: the thread
 * (`X-Thread-Id`), edgeweave's own (`X-Edgeweave-*`: trace, bookmark, …) and the Anthropic
 * Messages API's (`anthropic-*` versions and betas, Claude Code's session id). Transport and
 * client bookkeeping (user-agent, SDK retry counters) are not.
 */
const SELECTING = /^(x-thread-id|x-edgeweave-.+|anthropic-.+|x-claude-code-session-id)$/;
/** Response headers that describe this exchange rather than the result, so a replay does not repeat them. */
const NOT_REPLAYED = new Set(["content-length", "content-encoding", "transfer-encoding", "connection", "date", "server-timing", "x-request-id", "set-cookie"]);

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * What makes two requests the same request: route (with its query), the calling API key, every
 * selecting header (name and value, absent ones absent) and the body.
 */
export async function requestFingerprint(r: { route: string; keyId: string; headers: Headers; body: string }): Promise<string> {
  const selecting = [...r.headers.entries()].filter(([name]) => SELECTING.test(name)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(JSON.stringify({ route: `POST ${r.route}`, key: r.keyId, headers: selecting, body: r.body }));
}

/** Why a record keeps no result, as a retry is told it (BEM-131). */
const unkeptWhy = (why: Unkept, budget: KeptBudget): string =>
  why === "too_large"
    ? `a record keeps at most ${MAX_KEPT_BYTES.toLocaleString("en-US")} bytes`
    : why === "key_budget"
      ? `keeping it would take this API key's kept Idempotency-Key results past MAX_IDEMPOTENCY_BYTES_PER_KEY (${budget.key.toLocaleString("en-US")} bytes); a record stops counting 24 h after its request`
      : `keeping it would take the tenant's kept Idempotency-Key results past MAX_IDEMPOTENCY_BYTES_PER_TENANT (${budget.tenant.toLocaleString("en-US")} bytes); a record stops counting 24 h after its request`;

const replay = (r: Stored) => new Response(r.body, { status: r.status, headers: { ...r.headers, "idempotent-replayed": "true" } });

/** Renews the claim while its holder works; `stop` ends the renewals. */
function keepClaimed(db: D1Database, tenant: string, key: string): { stop(): void } {
  const timer = setInterval(() => {
    renew(db, tenant, key, IDEMPOTENCY_LEASE_MS).catch(() => undefined); // a missed renewal is retried on the next tick
  }, RENEW_MS);
  return { stop: () => clearInterval(timer) };
}

/**
 * `Idempotency-Key` on the POSTs that declare it (`access(…, { idempotent: true })`: runs and
 * writes; webhook deliveries have their own replay protection), per API key, for 24 h: the same
 * request (requestFingerprint) returns the stored result (nothing runs again); another request
 * with the key is 422 BEM-106; while the first is still running a duplicate waits for it, then
 * 409 BEM-107 (which SDKs retry). Streams are recorded whole and replayed as one body.
 */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const raw = c.req.header("idempotency-key");
  if (raw === undefined || c.req.method !== "POST") return next();
  if (!KEY.test(raw)) throw new AppError("BEM-108");
  const db = c.env.DB;
  const budget = keptBudget(c.env);
  const principal = c.get("principal");
  const tenant = principal.tenant;
  // Per API key: another key of the tenant using the same value makes a request of its own,
  // and learns nothing of this one (a replay of a result it might not be allowed to see, or a 422).
  const key = scopedKey(principal.keyId, raw);
  const url = new URL(c.req.url);
  const route = c.req.path;
  const bodyHash = await requestFingerprint({ route: url.pathname + url.search, keyId: principal.keyId, headers: c.req.raw.headers, body: await c.req.text() });

  const deadline = Date.now() + WAIT_MS;
  for (let poll = POLL_FIRST_MS; ; poll = Math.min(poll * 2, POLL_MAX_MS)) {
    const got = await claim(db, tenant, key, route, bodyHash, IDEMPOTENCY_LEASE_MS);
    if (got.kind === "owner") break;
    if (got.bodyHash !== bodyHash)
      throw new AppError("BEM-106", "This Idempotency-Key was used with a different request (route, thread or other X- headers, or body); use a new key");
    if (got.kind === "done") return replay(got.result);
    if (got.kind === "unkept")
      throw new AppError(
        "BEM-131",
        `The request with this Idempotency-Key ran (status ${got.status}), but its response could not be kept for replay (${unkeptWhy(got.why, budget)}); it is not run again. Read what it did (a thread's state, a stored response) or use a new key`,
        { headers: { "idempotent-replayed": "true" } },
      );
    if (Date.now() >= deadline) throw new AppError("BEM-107", `A request with this Idempotency-Key is still running after ${WAIT_MS / 1000} s; retry later`);
    await new Promise((r) => setTimeout(r, Math.min(poll, Math.max(0, deadline - Date.now()))));
  }

  const claimed = keepClaimed(db, tenant, key);
  let res: Response;
  try {
    await next();
    res = c.res;
  } catch (e) {
    claimed.stop();
    throw e;
  }
  const record = async (body: string, stream = false) => {
    claimed.stop();
    // A stream that ended without its completion marker saved nothing: a retry should run.
    if (retryable(res.status) || (stream && !STREAM_DONE.test(body))) return release(db, tenant, key);
    const headers: Record<string, string> = {};
    for (const [name, value] of res.headers) if (!NOT_REPLAYED.has(name)) headers[name] = value;
    // Too large to keep: the key still records that the request ran, so a retry never runs it twice.
    if (utf8Bytes(body) + utf8Bytes(JSON.stringify(headers)) > MAX_KEPT_BYTES) return completeUnkept(db, tenant, key, res.status, "too_large");
    try {
      // Past the tenant's or the key's budget the record keeps only that the request ran, as when too large.
      await complete(db, tenant, key, { status: res.status, headers, body }, budget);
    } catch (e) {
      // D1 refused the result (its own count of a row's bytes): keep that the request ran, then log why.
      await completeUnkept(db, tenant, key, res.status, "too_large");
      throw e;
    }
  };
  const logged = (p: Promise<unknown>) =>
    p.catch((e: unknown) => console.error(JSON.stringify({ level: "error", where: "idempotency", message: e instanceof Error ? e.message : String(e) })));
  if (Math.random() < 0.01) c.executionCtx.waitUntil(logged(pruneExpired(db)));
  if (res.body && (res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    // The client reads one copy; the whole stream is recorded from the other once it ends.
    const [toClient, toStore] = res.body.tee();
    c.res = new Response(toClient, res);
    c.executionCtx.waitUntil(logged(new Response(toStore).text().then((t) => record(t, true))));
    return;
  }
  await logged(
    res
      .clone()
      .text()
      .then((t) => record(t)),
  );
});
