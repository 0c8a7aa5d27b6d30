import { describe, expect, it } from "vitest";
import { anthropicError, speaksAnthropic } from "../../src/anthropic/errors";
import { catalog, type ErrorCode } from "../../src/core/errors";

/** Issue 22 item 6: our errors in Anthropic's shape; a configuration error never gets a status the SDK retries. */
const of = (code: ErrorCode) => anthropicError({ code, status: catalog[code].status, message: "m" });
const RETRIED = (s: number) => s === 408 || s === 409 || s === 429 || s >= 500;

describe("anthropicError", () => {
  it("maps each status to Anthropic's type, keeping statuses Anthropic has no type for", () => {
    expect(of("BEM-011")).toEqual({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "m", bem_code: "BEM-011" } } });
    expect(of("BEM-021").body.error.type).toBe("authentication_error");
    expect(of("BEM-025").body.error.type).toBe("permission_error");
    expect(of("BEM-105").body.error.type).toBe("not_found_error");
    expect(of("BEM-013")).toMatchObject({ status: 413, body: { error: { type: "request_too_large" } } });
    expect(of("BEM-017")).toMatchObject({ status: 413, body: { error: { type: "request_too_large" } } });
    expect(of("BEM-024").body.error.type).toBe("rate_limit_error");
    expect(of("BEM-041")).toMatchObject({ status: 422, body: { error: { type: "invalid_request_error" } } });
    expect(of("BEM-071")).toMatchObject({ status: 502, body: { error: { type: "api_error" } } });
    expect(of("BEM-072")).toMatchObject({ status: 504, body: { error: { type: "timeout_error" } } });
    expect(of("BEM-098")).toMatchObject({ status: 503, body: { error: { type: "overloaded_error" } } });
    expect(of("BEM-038")).toMatchObject({ status: 409, body: { error: { type: "invalid_request_error" } } });
  });

  it("configuration errors (model file, provider secret, an upstream refusing our key) are 424, never retried", () => {
    for (const code of ["BEM-042", "BEM-043", "BEM-044", "BEM-045", "BEM-048", "BEM-070", "BEM-073"] as const) {
      const { status, body } = of(code);
      expect(RETRIED(status), `${code} → ${status}`).toBe(false);
      expect(status).toBe(424);
      expect(body.error.type).toBe("api_error");
    }
  });

  it("every catalog code gets a type and a status", () => {
    for (const code of Object.keys(catalog) as ErrorCode[]) {
      const { status, body } = of(code);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(body.error.type).toMatch(/_error$|^request_too_large$/);
    }
  });

  it("applies to the Messages routes, and to model discovery only from Anthropic clients", () => {
    expect(speaksAnthropic("/v1/messages", undefined)).toBe(true);
    expect(speaksAnthropic("/v1/messages/count_tokens", undefined)).toBe(true);
    expect(speaksAnthropic("/v1/models", "2023-06-01")).toBe(true);
    expect(speaksAnthropic("/v1/models", undefined)).toBe(false);
    expect(speaksAnthropic("/v1/chat/completions", "2023-06-01")).toBe(false);
    expect(speaksAnthropic("/v1/messagesx", undefined)).toBe(false);
  });
});
