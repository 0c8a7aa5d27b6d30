import { OpenAPIHono } from "@hono/zod-openapi";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";
import { toErrorResponse } from "./errors";
import { validationHook } from "./validation";
import { authenticate } from "./auth";
import { threadRoutes } from "./threads";
import { adminRoutes } from "./admin";
import { memoryRoutes } from "./memory";
import { modelRoutes } from "./models";
import { routeRoutes } from "./route";
import { chatRoutes } from "./chat";
import { invokeRoutes } from "./invoke";
import { usageRoutes } from "./usage";

/** Every route file exports an OpenAPIHono sub-app; this assembles them. */
export function createApp() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  app.use("*", async (c, next) => {
    c.set("requestId", c.req.header("cf-ray") ?? crypto.randomUUID());
    await next();
  });

  app.get("/health", (c) => c.json({ ok: true }));

  app.use("/v1/*", authenticate);
  app.route("/", threadRoutes);
  app.route("/", adminRoutes);
  app.route("/", memoryRoutes);
  app.route("/", modelRoutes);
  app.route("/", routeRoutes);
  app.route("/", chatRoutes);
  app.route("/", invokeRoutes);
  app.route("/", usageRoutes);

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "edgeweave", version: "0.1.0", description: "Memory and model routing for AI agents, at the edge." },
  });

  app.notFound(() => {
    throw new AppError("BEM-002");
  });
  app.onError((err, c) => toErrorResponse(err, c));
  return app;
}

export const app = createApp();
export type App = typeof app;
