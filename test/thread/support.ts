import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { isAppError } from "../../src/core/errors";
import { createKey, createTenant } from "../../src/auth/tenant-store";
import { ThreadClient } from "../../src/thread/client";
import { threadObjectName } from "../../src/thread/thread-id";

let n = 0;
/** Storage is shared by the tests of a file, so every test takes fresh names. */
export const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++n}-${crypto.randomUUID().slice(0, 8)}`;

export const newThread = (tenant = unique("t")) => new ThreadClient(env, tenant, unique("thread"));

export const stubOf = (t: ThreadClient) => env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, t.threadId)));

type Msg<R> = { role: R; content: string };
function msg<R>(role: R) {
  function make(content: string): Msg<R>;
  function make(content: string, id: string): Msg<R> & { id: string };
  function make(content: string, id?: string) {
    return id ? { role, content, id } : { role, content };
  }
  return make;
}
export const user = msg("user" as const);
export const assistant = msg("assistant" as const);

/** A tenant with one key of the given role, for HTTP tests. */
export async function tenantKey(role: "admin" | "member") {
  const tenant = unique("tenant");
  await createTenant(env.DB, { id: tenant });
  // Members reach threads through session grants (src/auth/policy.ts); these reach all of the tenant's.
  const { key } = await createKey(env.DB, tenant, { role, scopes: role === "member" ? ["session:*"] : [] });
  return { tenant, key };
}

export async function call(key: string, method: string, path: string, body?: unknown) {
  const res = await exports.default.fetch(`http://x${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: test helper; assertions read arbitrary response JSON
  return { status: res.status, body: text ? (JSON.parse(text) as any) : null };
}

/** Expects the promise to reject with an AppError of this code. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${String(e)}`;
  }
  return "no error";
}

/** Runs `fn` on the storage of a fresh thread object, emptied first (no tables: the store creates them). */
export async function withStorage<T>(fn: (storage: DurableObjectStorage) => T | Promise<T>, prefix = "store"): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique(prefix)));
  return runInDurableObject(stub, async (_live, state) => {
    await state.storage.deleteAll();
    return fn(state.storage);
  });
}

/** The AppError code `fn` throws ("no error" when it returns). */
export function codeOfSync(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return isAppError(e) ? e.code : `not coded: ${String(e)}`;
  }
  return "no error";
}
