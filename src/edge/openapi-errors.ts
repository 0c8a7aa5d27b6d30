import { z } from "@hono/zod-openapi";
import { catalog, type ErrorCode } from "../core/errors";

export const ErrorBody = z.object({ error: z.object({ code: z.string().openapi({ example: "BEM-011" }), message: z.string() }) }).openapi("Error");

/** How a set of routes answers errors: the body schema, and the status and description each code gets there. */
export type ErrorShape = { schema: z.ZodType; render: (code: ErrorCode) => { status: number; note?: string } };

const OURS: ErrorShape = { schema: ErrorBody, render: (code) => ({ status: catalog[code].status }) };

/** OpenAPI error responses for the given codes (plus validation and auth), grouped by status, in `shape`. */
export function errorResponsesIn(shape: ErrorShape, ...codes: ErrorCode[]) {
  const byStatus = new Map<number, string[]>();
  for (const code of new Set(["BEM-011", "BEM-020", "BEM-021", "BEM-024", ...codes] as ErrorCode[])) {
    const { status, note } = shape.render(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), `${code} ${catalog[code].meaning}${note ? ` (${note})` : ""}`]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, lines]) => [status, { description: lines.join("; "), content: { "application/json": { schema: shape.schema } } }]),
  );
}

/** OpenAPI error responses for the given codes (plus validation and auth), grouped by status. */
export const errorResponses = (...codes: ErrorCode[]) => errorResponsesIn(OURS, ...codes);

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A run's 200: JSON, or with `stream: true` the same run as server-sent events. */
export const jsonOrEventStream = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema }, "text/event-stream": { schema: z.string() } },
});
