import { AppError, type ErrorCode, type ErrorOptions, isAppError } from "./errors";

/**
 * An AppError as it crosses to the thread object and back. RPC keeps only an Error's message, so the
 * object answers its errors as values, in this one shape, for RPC results and run events alike.
 */
export type WireError = { code: ErrorCode; message: string } & ErrorOptions;

/** What an RPC method of the thread object answers: its value, or its AppError as a WireError. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

export function toWireError(e: AppError): WireError {
  return {
    code: e.code,
    message: e.message,
    ...(e.internal !== undefined ? { internal: e.internal } : {}),
    ...(e.headers !== undefined ? { headers: e.headers } : {}),
    ...(e.details !== undefined ? { details: e.details } : {}),
  };
}

/** The options a WireError carries back into an AppError. */
export const wireOptions = (w: WireError): ErrorOptions => ({
  ...(w.internal !== undefined ? { internal: w.internal } : {}),
  ...(w.headers !== undefined ? { headers: w.headers } : {}),
  ...(w.details !== undefined ? { details: w.details } : {}),
});

/** The AppError a WireError was (its Retry-After, details and log detail kept; BEM-001's message is the catalog's). */
export function fromWireError(w: WireError): AppError {
  const opts = wireOptions(w);
  return new AppError(w.code, w.code === "BEM-001" ? undefined : w.message, opts);
}

/** `fn`'s value, or its AppError as a value; any other error is not ours and propagates (a 500). */
export function coded<T>(fn: () => T): RpcResult<T> {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    return failure(e);
  }
}

export async function codedAsync<T>(fn: () => Promise<T>): Promise<RpcResult<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    return failure(e);
  }
}

function failure(e: unknown): { ok: false; error: WireError } {
  if (!isAppError(e)) throw e;
  return { ok: false, error: toWireError(e) };
}

/** An RpcResult as its value, or its error thrown again as the AppError it was. */
export function unwrap<T>(r: RpcResult<T>): T {
  if (r.ok) return r.value;
  throw fromWireError(r.error);
}
