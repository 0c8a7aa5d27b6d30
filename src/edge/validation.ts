import type { Hook } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import type { AppEnv } from "./app-env";
import { describeIssues, type Issue } from "../core/zod-issues";

/** The first few zod issues of a request part as one message, paths included (`input`: the part as sent). */
export const issueSummary = (error: { issues: readonly Issue[] }, input?: unknown) => describeIssues(error.issues, { root: "(body)", input });

/** The value as sent, which @hono/zod-validator passes to the hook as `data` on a failure too (its types omit it there). */
export const sentValue = (result: object): unknown => ("data" in result ? result.data : undefined);

/** Turns a zod failure into BEM-011 with the first few issues, paths included. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) throw new AppError("BEM-011", issueSummary(result.error, sentValue(result)));
};
