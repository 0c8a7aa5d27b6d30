import { AppError } from "../core/errors";
import { isDotSegment } from "../core/path-segment";

const THREAD_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Validates a client-supplied thread id (BEM-030 otherwise). */
export function parseThreadId(raw: unknown): string {
  if (typeof raw !== "string" || !THREAD_ID.test(raw)) {
    throw new AppError("BEM-030", "Thread id must be 1-128 characters of A-Z a-z 0-9 . _ : -");
  }
  if (isDotSegment(raw)) throw new AppError("BEM-030", "Thread id must not be only dots ('.', '..'): it could never be addressed by URL");
  return raw;
}

/** The Durable Object name: a thread id never crosses tenants. */
export const threadObjectName = (tenant: string, threadId: string): string => `${tenant}:${threadId}`;

/** The thread object's class, as Env.THREADS names it (the object's folder sits above this one). */
type ThreadObject = Env["THREADS"] extends DurableObjectNamespace<infer T> ? T : never;
type Methods<T> = { [K in keyof T]-?: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T] & keyof T;

/** The object's RPC methods as its class declares them, each answering a promise of its declared result. */
export type ThreadStub = {
  [K in Exclude<Methods<ThreadObject>, keyof DurableObject>]: ThreadObject[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

/**
 * The one way to reach a thread's object, named by tenant and thread (a thread id never crosses tenants).
 * RPC's own types drop any result that holds `unknown` (channel values, message blocks: JSON, which RPC carries), so the stub is read as its class declares it.
 */
export const threadStub = (env: Env, tenant: string, threadId: string): ThreadStub =>
  env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, threadId))) as unknown as ThreadStub;
