import { createMiddleware } from "hono/factory";
import { AppError } from "../core/errors";
import type { AppEnv } from "../http/app-env";
import { claim, complete, pruneExpired, release, type Stored } from "./store";

const KEY = /^[\x21-\x7e]{1,255}$/;
/** How long the first request owns the key before a duplicate may take over (longer than any run). */
const LEASE_MS = 5 * 60 * 1000;
/** How long a duplicate waits for the first to finish before 409 BEM-107 (the thread lease's bound). */
const WAIT_MS = 30_000;
const POLL_MS = 50;
/** Results a retry may change are not kept: the key is released for the next attempt. */
const retryable = (status: number) => status >= 500 || status === 409 || status === 429 || status === 408;
/** Completion markers of our streams: chat `[DONE]`, Responses `response.completed`, invoke `done`. */
const STREAM_DONE = /^(data: \[DONE\]|event: response\.completed|event: done)$/m;
const KEPT_HEADERS = ["content-type", "x-edgeweave-model", "x-edgeweave-route", "location"];

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const replay = (r: Stored) => new Response(r.body, { status: r.status, headers: { ...r.headers, "idempotent-replayed": "true" } });

/**
 * `Idempotency-Key` on the POSTs that declare it (`access(…, { idempotent: true })`: runs and
 * writes; webhook deliveries have their own replay protection), per tenant, for 24 h: the same key with the same
 * body returns the stored result (nothing runs again); with another body 422 BEM-106; while
 * the first is still running a duplicate waits for it, then 409 BEM-107 (which SDKs retry).
 * Streams are recorded whole and replayed as one body.
 */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header("idempotency-key");
  if (key === undefined || c.req.method !== "POST") return next();
  if (!KEY.test(key)) throw new AppError("BEM-108");
  const db = c.env.DB;
  const principal = c.get("principal");
  const tenant = principal.tenant;
  const route = c.req.path;
  // The caller's key is part of the request: another key of the tenant reusing the key is a
  // different request (422), never a replay of a result it might not be allowed to see.
  const bodyHash = await sha256(`POST ${route}\n${principal.keyId}\n${await c.req.text()}`);

  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const got = await claim(db, tenant, key, route, bodyHash, LEASE_MS);
    if (got.kind === "owner") break;
    if (got.bodyHash !== bodyHash) throw new AppError("BEM-106", "This Idempotency-Key was used with a different request (route or body); use a new key");
    if (got.kind === "done") return replay(got.result);
    if (Date.now() >= deadline) throw new AppError("BEM-107", `A request with this Idempotency-Key is still running after ${WAIT_MS / 1000} s; retry later`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }

  await next();
  const res = c.res;
  const record = async (body: string, stream = false) => {
    // A stream that ended without its completion marker saved nothing: a retry should run.
    if (retryable(res.status) || (stream && !STREAM_DONE.test(body))) return release(db, tenant, key);
    const headers: Record<string, string> = {};
    for (const h of KEPT_HEADERS) {
      const v = res.headers.get(h);
      if (v !== null) headers[h] = v;
    }
    await complete(db, tenant, key, { status: res.status, headers, body });
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
