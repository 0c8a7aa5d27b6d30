import type { Hook } from "@hono/zod-openapi";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";

/** The first few zod issues as one message, paths included. */
export const issueSummary = (error: { issues: readonly { path: PropertyKey[]; message: string }[] }) =>
  error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`)
    .join("; ");

/** Turns a zod failure into BEM-011 with the first few issues, paths included. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) throw new AppError("BEM-011", issueSummary(result.error));
};
