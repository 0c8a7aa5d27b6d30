import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";

/** Where LangGraph's server API is served (the SDK's `apiUrl` is the origin plus this). */
export const AP = "/v1/agent-protocol";

/** The routes served under AP, for the messages of what is not (docs/guides/langgraph-sdk.md has the table). */
export const SERVED_ROUTES =
  "GET /info; POST /assistants/search, GET /assistants/{id}, /assistants/{id}/schemas; " +
  "POST /threads, /threads/search, GET/PATCH/DELETE /threads/{id}, GET/POST /threads/{id}/state, GET /threads/{id}/state/{checkpoint_id}, " +
  "POST /threads/{id}/state/checkpoint, POST /threads/{id}/history; " +
  "POST /threads/{id}/runs/stream, /threads/{id}/runs/wait, /threads/{id}/runs, /runs/stream, /runs/wait; " +
  "GET /threads/{id}/runs, /threads/{id}/runs/{run_id}, /threads/{id}/runs/{run_id}/join, /threads/{id}/runs/{run_id}/stream, POST /threads/{id}/runs/{run_id}/cancel";

/** 400 BEM-202: an option of LangGraph's API that edgeweave does not serve, named, with what to do instead. */
export function notServed(option: string, instead: string): never {
  throw new AppError("BEM-202", `${option} is not served by edgeweave: ${instead}`);
}

/** An option that is refused unless absent or null (the SDK sends absent options as undefined, some as null). */
export const Unserved = z.unknown().optional().openapi({ description: "Not served: refused (400 BEM-202) unless absent or null" });

/** Refuses each named option the body carries with a value. */
export function refuseUnserved(body: Record<string, unknown>, options: Record<string, string>): void {
  for (const [name, instead] of Object.entries(options)) {
    const v = body[name];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) notServed(name, instead);
  }
}
