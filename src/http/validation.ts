import type { Hook } from "@hono/zod-openapi";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";

/** Turns a zod failure into BEM-011 with the first few issues, paths included. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) {
    const issues = result.error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
    throw new AppError("BEM-011", issues.join("; "));
  }
};
