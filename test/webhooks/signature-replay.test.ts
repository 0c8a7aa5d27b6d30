import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { REPLAY_WINDOW_SECONDS, sign, withinReplayWindow } from "../../src/webhooks/signature";
import { claimSignature } from "../../src/webhooks/store";
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

/**
 * Issue 25, finding 6: a delivery timestamped +300 s, replayed 600.1 s later under a new delivery
 * id, ran again: its replay record was pruned about a second before the timestamp window closed.
 * The record must outlive every moment at which its timestamp is still accepted, boundaries included.
 */
describe("webhook replay records outlive the timestamp window", () => {
  it("the issue's case: +300 s, replayed 600.1 s later, is a duplicate", async () => {
    const hook = await registerHook(t);
    const acceptedAt = 1_800_000_000_000;
    const ts = acceptedAt / 1000 + REPLAY_WINDOW_SECONDS;
    const later = acceptedAt + 600_100;
    expect(withinReplayWindow(ts, acceptedAt)).toBe(true);
    expect(withinReplayWindow(ts, later)).toBe(true);
    expect((await claimSignature(env.DB, hook.id, "mac-issue", "first", acceptedAt)).first).toBe(true);
    expect(await claimSignature(env.DB, hook.id, "mac-issue", "replayed", later)).toEqual({ first: false, deliveryId: "first" });
  });

  it("property: up to the last millisecond its timestamp is accepted, a replay finds the first claim", async () => {
    const hook = await registerHook(t);
    const base = 1_800_000_000_000;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 999 }), // the millisecond within the second the delivery was accepted
        // its timestamp, relative to that second: the window's far edge weighted, as that is where records expire first
        fc.oneof(fc.constant(REPLAY_WINDOW_SECONDS), fc.integer({ min: -REPLAY_WINDOW_SECONDS, max: REPLAY_WINDOW_SECONDS })),
        fc.integer({ min: 0, max: 1500 }), // how long before the window closes it is replayed
        async (ms, offset, early) => {
          const acceptedAt = base + ms;
          const ts = Math.floor(acceptedAt / 1000) + offset;
          const lastAccepted = (ts + REPLAY_WINDOW_SECONDS + 1) * 1000 - 1;
          const replayAt = Math.max(acceptedAt, lastAccepted - early);
          expect(withinReplayWindow(ts, replayAt)).toBe(true);
          expect(withinReplayWindow(ts, lastAccepted + 1)).toBe(false);
          const mac = crypto.randomUUID();
          expect((await claimSignature(env.DB, hook.id, mac, "first", acceptedAt)).first).toBe(true);
          expect((await claimSignature(env.DB, hook.id, mac, "again", replayAt)).first).toBe(false);
        },
      ),
      { numRuns: 150 },
    );
  });
});
