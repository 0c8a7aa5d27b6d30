import { beforeAll, describe, expect, it } from "vitest";
import { sign } from "../../src/webhooks/signature";
import { createTenant, type TestTenant } from "../support/tenants";
import { deliver, deliveryCount, nowSeconds, registerHook } from "./helpers";

/**
 * Issue 11, finding 1: a captured delivery resent with its signature header
 * decorated (U+00A0 and friends, which String.prototype.trim() strips) and a
 * new X-Edgeweave-Delivery must not run again. Only `sha256=<64 hex>` is a
 * signature; the replay record is keyed on the MAC bytes, not the header text.
 */
let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});

const ticket = (id: string) => ({ ticket: { id, body: "captured" } });
const code = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;

describe("webhook signatures: one exact form, replay keyed on the MAC", () => {
  it("a captured delivery with decorated signatures and new delivery ids runs once", async () => {
    const hook = await registerHook(t);
    const body = JSON.stringify(ticket(`tk-${crypto.randomUUID().slice(0, 8)}`));
    const ts = String(nowSeconds());
    const sig = await sign(hook.secret, ts, body);
    expect((await deliver(hook, body, { timestamp: ts, signature: sig, deliveryId: "orig" })).status).toBe(202);

    // Whitespace fetch itself strips (space, tab) reaches us as the same header; everything else is not a signature.
    for (const [i, junk] of ["\u00a0", "\u3000", "\ufeff", "\u000b", "\u000c", "\u2028", "\u0085", "x", "=", ","].entries()) {
      const res = await deliver(hook, body, { timestamp: ts, signature: `${sig}${junk}`, deliveryId: `new-${i}` });
      expect.soft(res.status, JSON.stringify(junk)).toBe(401);
      expect.soft(await code(res)).toBe("BEM-090");
    }
    for (const [i, form] of [
      `\u00a0${sig}`,
      sig.replace("sha256=", "SHA256="),
      sig.replace("sha256=", "sha256= "),
      `${sig}${sig.slice(7)}`,
      `${sig},${sig}`,
    ].entries()) {
      const res = await deliver(hook, body, { timestamp: ts, signature: form, deliveryId: `form-${i}` });
      expect.soft(res.status, form).toBe(401);
    }
    // The same MAC in upper case is the same signature: a duplicate of the first delivery, not a new run.
    const upper = await deliver(hook, body, { timestamp: ts, signature: `sha256=${sig.slice(7).toUpperCase()}`, deliveryId: "upper" });
    expect(upper.status).toBe(202);
    expect(upper.headers.get("x-edgeweave-duplicate")).toBe("1");
    expect(((await upper.json()) as { delivery_id: string }).delivery_id).toBe("orig");
    // Surrounding spaces are stripped by the HTTP layer before we see them: still the same signature.
    const spaced = await deliver(hook, body, { timestamp: ts, signature: ` ${sig} `, deliveryId: "spaced" });
    expect(spaced.status).toBe(202);
    expect(spaced.headers.get("x-edgeweave-duplicate")).toBe("1");

    expect(await deliveryCount(hook.id)).toBe(1);
  });
});
