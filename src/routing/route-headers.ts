import type { RouteResult } from "./router";

const MAX_REASON = 200;

/** Response headers naming the model and why; ASCII-only and bounded so any reason is header-safe. */
export function routeHeaders(result: Pick<RouteResult, "model" | "reason">): { "X-Edgeweave-Model": string; "X-Edgeweave-Route": string } {
  let reason = result.reason.replace(/[^\x20-\x7e]/g, "?").trim();
  if (reason.length > MAX_REASON) reason = `${reason.slice(0, MAX_REASON - 3)}...`;
  return { "X-Edgeweave-Model": result.model.name, "X-Edgeweave-Route": reason };
}
