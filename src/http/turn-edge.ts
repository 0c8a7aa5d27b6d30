import type { Context } from "hono";
import { isAppError } from "../core/errors";
import { errorText, log } from "../core/log";
import type { Principal } from "../core/principal";
import { BOOKMARK_HEADER, parseBookmark } from "../memory/bookmark";
import { dispatchTurn } from "../pipeline/dispatch-turn";
import type { Timings } from "../pipeline/timings";
import type { TraceLevel, TurnInput, TurnResult } from "../pipeline/turn";
import { isFailoverError } from "../providers/failover";
import { routeHeaders } from "../routing/route-headers";
import type { AppEnv } from "../edge/app-env";
import { refuseForcedCallWithoutTools } from "./forced-tool-choice";
import { type StreamRenderer, streamRun } from "./stream-run";

/**
 * The HTTP edge of an agent turn: one path for every wire format. A route file owns its
 * OpenAPI route (schema, access, error codes) and a `WireFormat`, and hands the validated
 * body to `serveTurn`; the edge adds what every format shares — the caller, the request's
 * clock, the facts bookmark header, the trace level — runs the turn (in its thread's object
 * when it has one) and answers it: JSON with the route and Server-Timing headers, or SSE.
 *
 * What a wire format provides (chat, invoke, Responses and Anthropic Messages each do, in their
 * route file; another format is one more file of the same shape):
 * - `parse(body, edge)`: the request as a TurnInput (the format's own fields; the edge's are in
 *   `edge.base()`) and whatever rendering needs later (`plan`). Bad input throws a coded AppError.
 * - `render(result, plan)`: the finished turn as the format's JSON body, its run summary included
 *   (pipeline/turn.ts turnSummary is the one summary every format renders from); `headers(result,
 *   plan)` (optional) adds the format's own response headers.
 * - `stream(plan)`: the turn as the format's SSE events — start, each delta, done, and an error
 *   after output began (`streamErrorBody` is the shared error body; a format may use its own) —
 *   and, once the model is known, any headers of its own.
 * - `renderError(e)` (optional): a failure before any output, in the format's own error shape.
 *   Without it the app's one error handler answers (src/http/errors.ts: the documented
 *   `{error: {code, message}}`, or Anthropic's shape on the Messages routes).
 */
export type WireFormat<Body, Plan> = {
  parse(body: Body, edge: EdgeContext): Parsed<Plan> | Promise<Parsed<Plan>>;
  render(r: TurnResult, plan: Plan): unknown;
  headers?(r: TurnResult, plan: Plan): Record<string, string>;
  stream(plan: Plan): StreamRenderer;
  renderError?(e: unknown): { status: number; body: unknown };
};

/** A parsed request: the turn, whether to stream it, and what rendering needs. */
export type Parsed<Plan> = { turn: TurnInput; stream: boolean; plan: Plan };

/** What the edge knows of every run request before its format reads the body. */
export type EdgeContext = {
  env: Env;
  /**
   * The fields every turn has from the request itself: the caller, its clock, its facts bookmark
   * (400 BEM-160 when malformed, so a format checks what it checks first, then asks for these).
   */
  base(): { principal: Principal; timings: Timings; bookmark?: string };
  /**
   * The routing trace level the run's answer carries: the body's `trace` field when the format has
   * one, else the `X-Edgeweave-Trace` header, else the summary. Every format asks here, so the header
   * means the same on each.
   */
  trace(bodyField?: TraceLevel | null): TraceLevel;
};

/** Runs one turn request in `format` and answers it. */
export async function serveTurn<Body, Plan>(c: Context<AppEnv>, format: WireFormat<Body, Plan>, body: Body): Promise<Response> {
  try {
    const principal: Principal = c.get("principal");
    const timings: Timings = c.get("timings");
    const header = c.req.header("x-edgeweave-trace");
    const edge: EdgeContext = {
      env: c.env,
      base: () => {
        const bookmark = parseBookmark(c.req.header(BOOKMARK_HEADER));
        return { principal, timings, ...(bookmark !== undefined ? { bookmark } : {}) };
      },
      trace: (bodyField) => bodyField ?? (header === "full" || header === "summary" ? header : "summary"),
    };
    const { turn, stream, plan } = await format.parse(body, edge);
    refuseForcedCallWithoutTools(turn);
    const deps = { env: c.env, waitUntil: (p: Promise<unknown>) => c.executionCtx.waitUntil(p) };
    if (stream) return await streamRun(deps, turn, format.stream(plan));
    const r = await dispatchTurn(deps, turn);
    return c.json(format.render(r, plan) as object, 200, {
      ...routeHeaders({ model: r.model, reason: r.route.reason }),
      ...(format.headers?.(r, plan) ?? {}),
      "Server-Timing": r.timings.header(),
    });
  } catch (e) {
    if (!format.renderError) throw e;
    const { status, body: errorBody } = format.renderError(e);
    return c.json(errorBody as object, status as 400);
  }
}

/** The codes any run route may answer (each route adds its own). */
export const RUN_ERRORS = [
  "BEM-160",
  "BEM-022",
  "BEM-023",
  "BEM-030",
  "BEM-032",
  "BEM-038",
  "BEM-041",
  "BEM-046",
  "BEM-047",
  "BEM-065",
  "BEM-070",
  "BEM-071",
  "BEM-072",
  "BEM-073",
  "BEM-074",
  "BEM-075",
  "BEM-076",
  "BEM-077",
  "BEM-081",
  "BEM-083",
  "BEM-084",
  "BEM-220",
] as const;

/** The public body of a run that failed mid-stream (OpenAI clients read `error.message`). */
export function streamErrorBody(e: unknown) {
  if (isAppError(e)) {
    // The client sees the code; what the upstream said (redacted) goes to the log only.
    if (e.internal) log.error("stream", { code: e.code, internal: e.internal });
    return { error: { code: e.code, message: e.message, ...(isFailoverError(e) ? { attempts: e.attempts } : {}) } };
  }
  log.error("stream", { message: errorText(e) });
  return { error: { code: "BEM-001", message: "Internal error" } };
}
