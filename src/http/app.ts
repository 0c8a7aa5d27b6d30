import { knowAssets } from "../embed/embedded";
import { knowEmbedders } from "../pipeline/run-embed";
import { OpenAPIHono } from "@hono/zod-openapi";
import { requestId } from "hono/request-id";
import { secureHeaders } from "hono/secure-headers";
import { AppError } from "../core/errors";
import type { AppEnv } from "../edge/app-env";
import { toErrorResponse } from "./errors";
import { validationHook } from "../edge/validation";
import { Timings } from "../pipeline/timings";
import { resolvePrincipal } from "../edge/auth";
import { access } from "../edge/access";
import { corsForApi } from "./cors";
import { allowedMethodsFor } from "./allowed-methods";
import { langgraphPointer } from "../langgraph/not-served";
import { taskRoutes } from "./tasks";
import { webhookRoutes } from "./webhooks";
import { threadRoutes } from "./threads";
import { adminRoutes } from "./admin";
import { budgetRoutes } from "./budgets";
import { memoryRoutes } from "./memory";
import { modelRoutes } from "./models";
import { routeRoutes } from "./route";
import { chatRoutes } from "./chat";
import { invokeRoutes } from "./invoke";
import { responsesRoutes } from "./responses";
import { messagesRoutes } from "./messages";
import { conversationRoutes } from "./conversations";
import { usageRoutes } from "./usage";
import { docsRoutes } from "./docs";
import { uiRoutes } from "./ui";
import { landingRoutes } from "./landing";
import { langgraphRoutes } from "../langgraph/routes";
import { threadApiRoutes } from "./agent-protocol-threads";
import { runApiRoutes } from "./agent-protocol-runs";
import { runRecordRoutes } from "./agent-protocol-run-records";
import { mcpDoc, mcpRoutes } from "./mcp";
import { documentIdempotency } from "./openapi-idempotency";
import { rememberEnvSecrets } from "../core/log";

/** Every route file exports an OpenAPIHono sub-app; this assembles them. */
export function createApp() {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  // Every response: nosniff, no referrer, no framing, HSTS, same-origin opener and resource policy.
  // Outermost, so responses made by the error handler get them too.
  // Pages outside /v1 add their own Content-Security-Policy (src/http/assets.ts).
  app.use("*", secureHeaders({ xFrameOptions: "DENY", referrerPolicy: "no-referrer" }));
  // The id tags this request's error logs: Cloudflare's ray id, else a new UUID. An inbound
  // X-Request-Id is not taken (headerName ""), so a client cannot choose what our logs say;
  // the id is returned in X-Request-Id below (and on errors, src/http/errors.ts).
  app.use("*", requestId({ headerName: "", generator: (c) => c.req.header("cf-ray") ?? crypto.randomUUID() }));
  app.use("*", async (c, next) => {
    rememberEnvSecrets(c.env);
    knowAssets(c.env.ASSETS);
    knowEmbedders(c.env);
    c.set("timings", new Timings());
    await next();
    c.header("x-request-id", c.get("requestId"));
  });

  app.get("/health", access("public"), (c) => c.json({ ok: true }));

  // Before any route, so preflight requests (which carry no key) are answered.
  app.use("/v1/*", corsForApi);
  // Each route declares its own access and body limit (src/edge/access.ts).
  // One chain, so `typeof app` accumulates every sub-app's routes (hono/client reads them).
  const api = app
    .route("/", threadRoutes)
    .route("/", adminRoutes)
    .route("/", budgetRoutes)
    .route("/", memoryRoutes)
    .route("/", modelRoutes)
    .route("/", routeRoutes)
    .route("/", chatRoutes)
    .route("/", invokeRoutes)
    .route("/", responsesRoutes)
    .route("/", messagesRoutes)
    .route("/", conversationRoutes)
    .route("/", usageRoutes)
    .route("/", webhookRoutes)
    .route("/", taskRoutes)
    .route("/", langgraphRoutes)
    .route("/", threadApiRoutes)
    .route("/", runApiRoutes)
    .route("/", runRecordRoutes);

  // MCP clients (desktop assistants, IDEs): the same keys and rate limits as /v1 (declared in ./mcp).
  app.route("/", mcpRoutes);
  app.openAPIRegistry.registerPath(mcpDoc);

  // Pages outside /v1 (no key needed to load them).
  app.route("/", landingRoutes);
  app.route("/", docsRoutes);
  app.route("/", uiRoutes);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "An API key: the operator key or a tenant key (`Authorization: Bearer <key>`).",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "The same key in `x-api-key` (Anthropic's and LangGraph's SDKs); with both headers, they must carry the same key.",
  });
  app.get("/openapi.json", access("public"), (c) =>
    c.json(
      documentIdempotency(
        app.getOpenAPI31Document({
          openapi: "3.1.0",
          info: { title: "edgeweave", version: "0.1.0", description: "Memory and model routing for AI agents, at the edge." },
          // The origin that served the document: /docs' samples ("Try it", curl) go to this gateway, not a relative URL.
          servers: [{ url: new URL(c.req.url).origin, description: "This gateway" }],
          security: [{ bearer: [] }, { apiKey: [] }],
        }),
        app.routes,
      ),
    ),
  );

  const methodsOn = allowedMethodsFor(app.routes);
  app.notFound(async (c) => {
    // Under /v1 the key is checked first, so the API's shape is not probed without one.
    if (c.req.path.startsWith("/v1/")) await resolvePrincipal(c);
    const allow = methodsOn(c.req.path);
    const pointer = langgraphPointer(c.req.method, c.req.path, allow);
    if (pointer) throw pointer;
    if (allow.length > 0)
      throw new AppError("BEM-003", `${c.req.method} is not served here; use ${allow.join(", ")}`, { headers: { allow: allow.join(", ") } });
    throw new AppError("BEM-002");
  });
  app.onError((err, c) => toErrorResponse(err, c));
  return api;
}

export const app = createApp();
export type App = typeof app;
