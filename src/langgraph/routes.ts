import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../edge/app-env";
import { validationHook } from "../edge/validation";
import { checkpointRoutes } from "./checkpoint-routes";
import { storeRoutes } from "./store-routes";

/** Everything under /v1/langgraph: the checkpointer (EdgeweaveSaver) and the store (EdgeweaveStore, the SDK's StoreClient). */
export const langgraphRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).route("/", checkpointRoutes).route("/", storeRoutes);
