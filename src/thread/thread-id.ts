import { AppError } from "../errors";
import { isDotSegment } from "../path-segment";

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
