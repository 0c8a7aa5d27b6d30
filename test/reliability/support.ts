/**
 * Shared pieces of the reliability suite: the app's routes, the exact error
 * shape check, a whole-D1 dump for "storage unchanged", a rotating key pool
 * (so the per-key rate limit does not turn every fuzz case into a 429), and
 * the RELIABILITY summary line the lead quotes figures from.
 */
import { env, exports } from "cloudflare:workers";
import { catalog } from "../../src/core/errors";
import { app } from "../../src/http/app";
import { createKey } from "../support/tenants";

/** One fixed seed for every generator in the suite: a failure replays exactly. */
export const SEED = 20_261_129;

export type RouteRef = { method: string; path: string };

/** Every concrete route the app serves (middleware "ALL" entries left out), read from the app itself. */
export function appRoutes(): RouteRef[] {
  const seen = new Map<string, RouteRef>();
  for (const r of app.routes) if (r.method !== "ALL") seen.set(`${r.method} ${r.path}`, { method: r.method, path: r.path });
  return [...seen.values()];
}

export type Sent = { status: number; contentType: string | null; text: string; headers: Headers };

/** A raw call: `body` as given (a Uint8Array sends no content-type of its own), `contentType` null for none. */
export async function send(
  method: string,
  path: string,
  opts: { key?: string; body?: Uint8Array | string; contentType?: string | null; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.contentType) headers["content-type"] = opts.contentType;
  const res = await exports.default.fetch(`http://x${path}`, { method, headers, body: opts.body });
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text(), headers: res.headers };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Null when the answer is a coded 4xx with exactly {"error":{"code","message"}},
 * a catalogued code whose status is the HTTP status; else what is wrong.
 */
export function codedClientErrorProblem(r: Pick<Sent, "status" | "contentType" | "text">): string | null {
  if (r.status < 400 || r.status > 499) return `status ${r.status}`;
  return codedErrorProblem(r);
}

/** As above for any error status (4xx or 5xx upstream errors like 502/504). */
export function codedErrorProblem(r: Pick<Sent, "status" | "contentType" | "text">): string | null {
  if (!r.contentType?.startsWith("application/json")) return `content-type ${r.contentType}`;
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    return "body is not JSON";
  }
  const anthropic = anthropicShape(body);
  if (anthropic === "wrong") return "Anthropic error not {type:'error', error:{type, message, bem_code}}";
  if (!anthropic && (!isObject(body) || Object.keys(body).join(",") !== "error" || !isObject(body.error))) return "not {error:{…}}";
  const e = anthropic ?? (body as { error: Record<string, unknown> }).error;
  if (!anthropic && Object.keys(e).sort().join(",") !== "code,message") return `error keys ${Object.keys(e).join(",")}`;
  if (typeof e.code !== "string" || !/^BEM-\d{3}$/.test(e.code) || !(e.code in catalog)) return `code ${String(e.code)}`;
  if (typeof e.message !== "string" || e.message === "") return "empty message";
  const status = catalog[e.code as keyof typeof catalog].status;
  if (status !== r.status) return `code ${e.code} is ${status} in the catalog, answered ${r.status}`;
  return null;
}

/**
 * The Messages API answers errors in Anthropic's documented shape (README: errors in Anthropic's shape),
 * carrying the same catalog code as `bem_code`: as {code, message} for the checks above, "wrong" when
 * it claims that shape without keeping it, undefined for any other body.
 */
function anthropicShape(body: unknown): { code: unknown; message: unknown } | "wrong" | undefined {
  if (!isObject(body) || body.type !== "error") return undefined;
  const e = body.error;
  if (Object.keys(body).sort().join(",") !== "error,type" || !isObject(e)) return "wrong";
  if (Object.keys(e).sort().join(",") !== "bem_code,message,type" || typeof e.type !== "string" || !/^[a-z_]+$/.test(e.type)) return "wrong";
  return { code: e.bem_code, message: e.message };
}

/** Every row of every application table in D1, in a stable order (FTS5's shadow tables are the index of facts_fts, which is dumped). */
/**
 * Every D1 row, but rows of the tenants in `skip` (test files share one runtime, so another
 * file's background work — a dead letter, a usage row — may still land for its own tenants),
 * and not `bookkeeping_sends`: the thread objects' send ledger has no tenant, and any file's
 * object may land a send at any time (what a send writes, `usage` and `threads`, is compared).
 */
export async function dumpD1(skip: ReadonlySet<string> = new Set()): Promise<Record<string, unknown[]>> {
  const tables = await env.DB.prepare(
    `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' AND name NOT LIKE '%\\_fts\\_%' ESCAPE '\\' ORDER BY name`,
  ).all<{ name: string }>();
  const out: Record<string, unknown[]> = {};
  for (const { name } of tables.results) {
    if (name === "bookkeeping_sends") continue;
    const rows = (await env.DB.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all<Record<string, unknown>>()).results;
    out[name] = rows.filter((r) => !skip.has(String(r.tenant_id)));
  }
  return out;
}

/**
 * Admin keys of one tenant, handed out in turn so no key passes `perKey` calls
 * (the admin rate limit is 600 a minute per key).
 */
export async function keyPool(tenant: string, size: number, perKey = 300): Promise<() => string> {
  const keys: string[] = [];
  for (let i = 0; i < size; i++) keys.push((await createKey(tenant, { role: "admin", name: `pool ${i}` })).key);
  let calls = 0;
  return () => {
    const key = keys[Math.floor(calls++ / perKey)];
    if (!key) throw new Error(`key pool of ${size} exhausted after ${calls - 1} calls; make it bigger`);
    return key;
  };
}

/** The line the lead quotes: `RELIABILITY {"section":…,…}`. */
export function report(section: string, figures: Record<string, unknown>): void {
  console.log(`RELIABILITY ${JSON.stringify({ section, ...figures })}`);
}

/** `n` promises at a time over `items`, results in order. */
export async function pool<T, R>(items: readonly T[], n: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}
