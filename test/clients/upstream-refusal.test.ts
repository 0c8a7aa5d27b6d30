import { describe, expect, it } from "vitest";
import { APIError } from "openai";
import { fakeOpenAI } from "../support/fake-openai";
import { loggedLines } from "../support/logs";
import { openaiClient, tenantForRuns } from "../support/runs";

/**
 * An upstream that refuses our key or the request (a 4xx other than 408/409/429: BEM-073) is a
 * configuration error that a retry does not fix. /v1/messages answered it 424, but chat and
 * Responses answered 502, which the openai client (and the AI SDK) retry: with the client's default
 * two retries the provider was called three times and refused three times.
 */
const tenant = tenantForRuns();

describe("an upstream refusal (BEM-073) through the openai client with its default retries", () => {
  for (const upstream of [401, 400] as const)
    for (const api of ["chat", "responses"] as const)
      it(`${api}, upstream ${upstream}: 424 BEM-073, the provider called once`, async () => {
        const fake = fakeOpenAI().status(upstream).status(upstream).status(upstream);
        const client = openaiClient(tenant().adminKey, 2);
        const call =
          api === "chat"
            ? client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
            : client.responses.create({ model: "gpt-4o-mini", input: "hi" });
        const err = await call.then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(APIError);
        expect((err as APIError).status).toBe(424);
        expect(((err as APIError).error as { code?: string }).code).toBe("BEM-073");
        expect(fake.calls).toHaveLength(1);
        // The upstream's reason is the operator's to read: in the worker log, never in the answer.
        expect(loggedLines().join("\n")).toContain(`upstream ${upstream}`);
      });
});
