import type { ModelConfig } from "../config/model-config";
import { AppError } from "../core/errors";
import type { TurnInput } from "./turn";

/** Responses' truncation "disabled": a conversation that does not fit is refused, as OpenAI refuses it, not cut. */
export function untruncated(input: Pick<TurnInput, "truncation">, model: Pick<ModelConfig, "name" | "max_tokens">): void {
  if (input.truncation === "disabled")
    throw new AppError(
      "BEM-112",
      `The conversation does not fit ${model.name}'s context window (${model.max_tokens} tokens) and truncation is disabled; send truncation: "auto" to drop its oldest turns`,
    );
}
