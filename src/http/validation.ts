import type { Hook } from "@hono/zod-openapi";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";
import { describeIssues, type Issue } from "../zod-issues";

/** The first few zod issues of a request part as one message, paths included. */
export const issueSummary = (error: { issues: readonly Issue[] }) => describeIssues(error.issues, { root: "(body)" });

/** Turns a zod failure into BEM-011 with the first few issues, paths included. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) throw new AppError("BEM-011", issueSummary(result.error));
};
