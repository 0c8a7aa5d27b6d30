import { AppError, type ErrorBody } from "../core/errors";
import { modelByName, models } from "./bundled";

/** Edit distance (insertions, deletions, substitutions), case-insensitive. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const row = [i];
    for (let j = 1; j <= y.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[y.length]!;
}

/** The configured names nearest to `name` (up to `n`, nearest first, ties in file order). */
export function closestModels(name: string, n = 3): string[] {
  return models
    .map((m, i) => ({ name: m.name, d: distance(name, m.name), i }))
    .sort((p, q) => p.d - q.d || p.i - q.i)
    .slice(0, n)
    .map((m) => m.name);
}

/**
 * An unknown model on an OpenAI-compatible endpoint. The body carries OpenAI's shape, so
 * OpenAI clients see `code: "model_not_found"`, and our catalog code in `bem_code`:
 * {"error":{"code":"model_not_found","bem_code":"BEM-105","type":"invalid_request_error","param":"model","message":"…"}}
 */
export class ModelNotFoundError extends AppError {
  constructor(readonly model: string) {
    super(
      "BEM-105",
      `The model '${model.slice(0, 128)}' does not exist here. Closest configured: ${closestModels(model).join(", ")} (or "auto" to route; GET /v1/models lists them)`,
    );
  }

  override toJSON(): ErrorBody {
    const body = { error: { code: "model_not_found", bem_code: this.code, type: "invalid_request_error", param: "model", message: this.message } };
    return body as unknown as ErrorBody;
  }
}

/** On chat and Responses, a typo is not a routing decision: `auto` or a configured name, else 404 model_not_found. */
export function requireKnownModel(model: string): void {
  if (model !== "auto" && modelByName(model) === undefined) throw new ModelNotFoundError(model);
}
