import { closestNames } from "../core/closest-names";
import { AppError, type ErrorBody } from "../core/errors";
import { modelByName, models } from "./bundled";

/** The configured names nearest to `name` (up to `n`, nearest first, ties in file order). */
export const closestModels = (name: string, n = 3): string[] =>
  closestNames(
    name,
    models.map((m) => m.name),
    n,
  );

/**
 * An unknown model on an OpenAI-compatible endpoint. The body carries OpenAI's shape, so
 * OpenAI clients see `code: "model_not_found"`, and our catalog code in `bem_code`:
 * {"error":{"code":"model_not_found","bem_code":"BEM-105","type":"invalid_request_error","param":"model","message":"…"}}
 */
const notFound = (model: string) =>
  `The model '${model.slice(0, 128)}' does not exist here. Closest configured: ${closestModels(model).join(", ")} (or "auto" to route; GET /v1/models lists them)`;

export class ModelNotFoundError extends AppError {
  constructor(readonly model: string) {
    super("BEM-105", notFound(model));
  }

  override toJSON(): ErrorBody {
    const body = { error: { code: "model_not_found", bem_code: this.code, type: "invalid_request_error", param: "model", message: this.message } };
    return body as unknown as ErrorBody;
  }
}

/**
 * A typo is not a routing decision: `auto` or a configured name, else 404 — model_not_found in OpenAI's
 * shape on its compatible routes, edgeweave's own `{code: "BEM-105"}` elsewhere (the LangGraph API).
 */
export function requireKnownModel(model: string, shape: "openai" | "edgeweave" = "openai"): void {
  if (model === "auto" || modelByName(model) !== undefined) return;
  throw shape === "openai" ? new ModelNotFoundError(model) : new AppError("BEM-105", notFound(model));
}
