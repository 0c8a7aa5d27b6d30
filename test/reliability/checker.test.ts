/** The error-shape check every reliability property leans on: it must refuse what it should. */
import { describe, expect, it } from "vitest";
import { codedClientErrorProblem, codedErrorProblem } from "./support";

const JSON_CT = "application/json; charset=UTF-8";
const err = (status: number, body: unknown, contentType: string | null = JSON_CT) => ({
  status,
  contentType,
  text: typeof body === "string" ? body : JSON.stringify(body),
});

describe("codedClientErrorProblem", () => {
  it("accepts a catalogued 4xx with exactly {error:{code,message}}", () => {
    expect(codedClientErrorProblem(err(400, { error: { code: "BEM-011", message: "x: bad" } }))).toBeNull();
    expect(codedClientErrorProblem(err(413, { error: { message: "too big", code: "BEM-013" } }))).toBeNull();
  });

  it.each([
    ["a 2xx", err(200, { ok: true })],
    ["a 5xx, even coded", err(500, { error: { code: "BEM-001", message: "Internal error" } })],
    ["a status the code does not have", err(400, { error: { code: "BEM-013", message: "too big" } })],
    ["an uncatalogued code", err(400, { error: { code: "BEM-999", message: "?" } })],
    ["a code of another shape", err(400, { error: { code: "E11", message: "?" } })],
    ["an extra key in error", err(400, { error: { code: "BEM-011", message: "m", stack: "at x" } })],
    ["an extra top-level key", err(400, { error: { code: "BEM-011", message: "m" }, detail: 1 })],
    ["an empty message", err(400, { error: { code: "BEM-011", message: "" } })],
    ["a non-JSON body", err(400, "Bad Request")],
    ["a non-JSON content type", err(400, { error: { code: "BEM-011", message: "m" } }, "text/plain")],
  ])("refuses %s", (_, r) => {
    expect(codedClientErrorProblem(r)).not.toBeNull();
  });

  it("codedErrorProblem also takes upstream 5xx codes", () => {
    expect(codedErrorProblem(err(502, { error: { code: "BEM-071", message: "upstream" } }))).toBeNull();
    expect(codedErrorProblem(err(504, { error: { code: "BEM-071", message: "upstream" } }))).not.toBeNull();
  });
});
