import { catalog, type ErrorCode } from "../core/errors";
import { errorResponsesIn, type ErrorShape } from "../edge/openapi-errors";
import { anthropicError } from "./errors";
import { AnthropicErrorBody } from "./schema";

const ANTHROPIC: ErrorShape = {
  schema: AnthropicErrorBody,
  render: (code) => {
    const { status, body } = anthropicError({ code, status: catalog[code].status, message: "" });
    return { status, note: body.error.type };
  },
};

/** OpenAPI error responses of the Messages routes: our codes in Anthropic's shape, with the status each is answered with. */
export const anthropicErrorResponses = (...codes: ErrorCode[]) => errorResponsesIn(ANTHROPIC, ...codes);
