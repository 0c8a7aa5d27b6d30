import { describe, expect, it } from "vitest";
import { api, createTenant, OPERATOR_KEY } from "../support/tenants";

type ErrorBody = { error: { code: string; message: string } };
const errorOf = async (res: Response) => ({ status: res.status, ...((await res.json()) as ErrorBody).error });

// Issue 24.5: a refusal says what was expected or what to do instead, not only that it refused.
describe("error messages say what to do", () => {
  it("an unknown agent names the closest configured agents", async () => {
    const t = await createTenant();
    const e = await errorOf(
      await api("/v1/invoke", { key: t.adminKey, body: { agent_name: "asistant", session_id: "s1", content: [{ type: "text", text: "hi" }] } }),
    );
    expect(e.status).toBe(404);
    expect(e.code).toBe("BEM-047");
    expect(e.message).toMatch(/Closest configured: assistant\b/);
  });

  it("a numeric chat content says which types it accepts", async () => {
    const t = await createTenant();
    const e = await errorOf(await api("/v1/chat/completions", { key: t.adminKey, body: { model: "auto", messages: [{ role: "user", content: 42 }] } }));
    expect(e.status).toBe(400);
    expect(e.message).not.toMatch(/Invalid input(;|$)/);
    expect(e.message).toMatch(/messages\.0\.content: .*expected string or array.*received number/);
  });

  it("a Responses call without input says input is required and what it takes", async () => {
    const t = await createTenant();
    const e = await errorOf(await api("/v1/responses", { key: t.adminKey, body: { model: "auto" } }));
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/input: .*required.*expected string or array/i);
  });

  it("a Responses input item says what is wrong in the item it was meant to be", async () => {
    const t = await createTenant();
    const e = await errorOf(await api("/v1/responses", { key: t.adminKey, body: { model: "auto", input: [{ type: "message", role: "user", content: 5 }] } }));
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/^input\.0\.content: Invalid input: expected string or array, received number/);
  });

  it("the operator key is told to use a tenant key", async () => {
    const e = await errorOf(await api("/v1/invoke", { key: OPERATOR_KEY, body: { agent_name: "assistant", content: [{ type: "text", text: "hi" }] } }));
    expect(e.status).toBe(403);
    expect(e.message).toMatch(/^The operator key cannot .+; use a tenant key/);
    expect(e.message).not.toMatch(/A operator/);
  });
});
