import { dispatchTurn, type WorkerDeps } from "../pipeline/dispatch-turn";
import type { TurnInput, TurnResult } from "../pipeline/turn";
import type { DeltaEvent } from "../providers/types";
import type { ModelConfig } from "../config/model-config";
import { routeHeaders } from "../routing/route-headers";
import type { RouteResult } from "../routing/router";
import { sseResponse, type SseWriter } from "./sse";

/** How one endpoint renders a streamed run as SSE events. */
export type StreamRenderer = {
  /** Extra response headers, once the answering model is known (before the first byte). */
  headers?(model: ModelConfig): Record<string, string>;
  start(out: SseWriter, model: ModelConfig): Promise<void>;
  delta(out: SseWriter, ev: DeltaEvent): Promise<void>;
  done(out: SseWriter, r: TurnResult): Promise<void>;
  error(out: SseWriter, e: unknown): Promise<void>;
};

/**
 * Runs a turn as a stream. Until the first upstream event, failures are thrown
 * (so the client gets a plain coded JSON error with its status); afterwards they
 * become an error event. The run is kept alive by waitUntil, so a client that
 * goes away does not stop the reply from being saved.
 */
export function streamRun(deps: WorkerDeps, input: TurnInput, render: StreamRenderer): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    let out: SseWriter | undefined;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((r) => (finish = r));
    const run = dispatchTurn(deps, input, {
      async start(model: ModelConfig, route: Pick<RouteResult, "reason">) {
        resolve(
          sseResponse(
            async (w) => {
              out = w;
              await render.start(w, model);
              await finished;
            },
            deps.waitUntil,
            { ...routeHeaders({ model, reason: route.reason }), ...(render.headers?.(model) ?? {}) },
          ),
        );
      },
      async delta(ev) {
        if (out) await render.delta(out, ev);
      },
    }).then(
      async (r) => {
        if (out) await render.done(out, r);
        finish();
      },
      async (e: unknown) => {
        if (out) await render.error(out, e);
        else reject(e);
        finish();
      },
    );
    deps.waitUntil(run);
  });
}
