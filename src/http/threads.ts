import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./app-env";
import { validationHook } from "./validation";

export const threadRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
