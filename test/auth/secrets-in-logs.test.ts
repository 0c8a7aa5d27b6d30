import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loggedLines } from "../support/logs";
import { api, createTenant, OPERATOR_KEY } from "../support/tenants";

describe("no key, hash or secret in logs or error bodies", () => {
  // The worker's logger writes to the test capture (test/support/logs.ts); anything printed directly is caught here too.
  const printed: string[] = [];
  beforeEach(() => {
    printed.length = 0;
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        printed.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
      });
    }
  });
  afterEach(() => vi.restoreAllMocks());

  it("auth failures, revocations and admin calls leak nothing", async () => {
    const t = await createTenant();
    const digest = async (s: string) =>
      [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const bodies: string[] = [];
    const call = async (...args: Parameters<typeof api>) => bodies.push(await (await api(...args)).text());

    await call("/v1/memory/facts?scope=system", { key: t.memberKey.slice(0, -1) + "Z" });
    await call("/v1/memory/facts?scope=system", { key: OPERATOR_KEY + "x" });
    await call("/v1/memory/facts", { key: t.memberKey, body: { scope: "organization:x", kind: "k", text: "t" } });
    await call("/v1/memory/facts", { key: t.memberKey, body: "{not json" });
    await call(`/v1/admin/tenants/${t.tenant}/keys/${t.memberKeyId}`, { method: "DELETE", key: t.adminKey });
    await call("/v1/memory/facts?scope=system", { key: t.memberKey });
    await call(`/v1/admin/tenants/${t.tenant}/keys`, { key: OPERATOR_KEY });

    const secrets = [OPERATOR_KEY, t.adminKey, t.memberKey, await digest(t.adminKey), await digest(t.memberKey), await digest(OPERATOR_KEY)];
    const seen = [...printed, ...loggedLines(), ...bodies].join("\n");
    expect(bodies.length).toBe(7);
    for (const s of secrets) expect(seen).not.toContain(s);
  });
});
