import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError, isAppError } from "../core/errors";
import type { AppEnv } from "../edge/app-env";
import { anthropicError, speaksAnthropic } from "../anthropic/errors";
import { log } from "../core/log";

/** One place that turns any thrown value into the public error shape. */
export function toErrorResponse(err: unknown, c: Context<AppEnv>): Response {
  let appErr: AppError;
  if (isAppError(err)) {
    appErr = err;
  } else if (err instanceof HTTPException) {
    const status = err.status;
    appErr =
      status === 413
        ? new AppError("BEM-013")
        : status === 415
          ? new AppError("BEM-012")
          : // Hono's own JSON validator (e.g. an empty body on a route that requires one).
            status === 400 && /malformed json/i.test(err.message)
            ? new AppError("BEM-010")
            : status === 404
              ? new AppError("BEM-002")
              : status === 401
                ? new AppError("BEM-020")
                : new AppError("BEM-011", "Bad request");
  } else {
    appErr = new AppError("BEM-001", undefined, { internal: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  if ((appErr.status >= 500 || appErr.status === 424) && (appErr.code === "BEM-001" || appErr.internal)) {
    // Internal details go to logs only, tagged by request id (a 424 is a configuration error: the operator needs the upstream's reason).
    log.error("request", { requestId: c.get("requestId"), code: appErr.code, internal: appErr.internal });
  }
  // Anthropic Messages clients read Anthropic's error shape (the SDK raises its typed errors from it).
  const anthropic = speaksAnthropic(c.req.path, c.req.header("anthropic-version")) ? anthropicError(appErr) : undefined;
  const res = anthropic ? c.json(anthropic.body, anthropic.status as 400) : c.json(appErr.toJSON(), appErr.status as 400);
  for (const [k, v] of Object.entries(appErr.headers ?? {})) res.headers.set(k, v);
  // Also here: a response made while handling an error skips the outer middleware.
  const requestId = c.get("requestId");
  if (requestId) res.headers.set("x-request-id", requestId);
  return res;
}
