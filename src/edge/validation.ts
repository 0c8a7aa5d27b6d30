import type { Hook } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import type { AppEnv } from "./app-env";
import { describeIssues, type Issue } from "../core/zod-issues";

/** The first few zod issues of a request part as one message, paths included (`input`: the part as sent; `part`: which one). */
export const issueSummary = (error: { issues: readonly Issue[] }, input?: unknown, part = "body") => describeIssues(error.issues, { root: `(${part})`, input });

/** The value as sent, which @hono/zod-validator passes to the hook as `data` on a failure too (its types omit it there). */
export const sentValue = (result: object): unknown => ("data" in result ? result.data : undefined);

/** Turns a zod failure into BEM-011 with the first few issues, paths included. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  // An issue on the part as a whole (an unknown key) names the part, so a query parameter is not called a body field.
  if (!result.success) throw new AppError("BEM-011", issueSummary(result.error, sentValue(result), result.target === "json" ? "body" : result.target));
};
