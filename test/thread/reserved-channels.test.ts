import { describe, expect, it } from "vitest";
import { applyUpdate, mergeStepUpdates } from "../../src/pipeline/state";
import { emptyReplayState } from "../../src/thread/reducers";
import { toThreadState } from "../../src/thread/thread-store";
import { call, codeOf, newThread, tenantKey, unique, user } from "./support";

/**
 * Issue 11, finding 6: `__proto__` as a channel name replaced the state object's
 * prototype, and every later state read was a 500. Reserved names are refused
 * (400, coded, nothing stored) and channel maps have no prototype to hijack.
 */
const RESERVED = ["__proto__", "constructor", "prototype"];

describe("reserved channel names", () => {
  it.each(RESERVED)("POST …/state setting '%s' → 400 BEM-035, nothing stored, state still readable", async (name) => {
    const { key } = await tenantKey("admin");
    const id = unique("th");
    expect((await call(key, "POST", `/v1/threads/${id}/state`, { ops: [{ op: "append", messages: [user("hi")] }] })).status).toBe(200);
    // Raw JSON so `__proto__` is an own key of the op, as an attacker sends it.
    const raw = `{"ops":[{"op":"set","channel":${JSON.stringify(name)},"value":{"polluted":true},"reducer":"merge"}]}`;
    const res = await call(key, "POST", `/v1/threads/${id}/state`, raw);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("BEM-035");
    const state = await call(key, "GET", `/v1/threads/${id}/state`);
    expect(state.status).toBe(200);
    expect(state.body.step).toBe(1);
    expect(Object.keys(state.body.channels)).toEqual(["messages"]);
    const history = await call(key, "GET", `/v1/threads/${id}/history`);
    expect(history.body.checkpoints).toHaveLength(1);
  });

  it.each(RESERVED)("the thread client refuses '%s' too (BEM-035)", async (name) => {
    const t = newThread();
    expect(await codeOf(t.update([{ op: "set", channel: name, value: 1 }], "update"))).toBe("BEM-035");
  });

  it("the client hands out channel maps without a prototype", async () => {
    const t = newThread();
    await t.update([{ op: "set", channel: "topic", value: "x" }], "update");
    const s = await t.getState();
    expect(Object.getPrototypeOf(s.channels)).toBeNull();
    expect(Object.getPrototypeOf(s.reducers)).toBeNull();
    expect(s.channels.topic).toBe("x");
  });

  it("in-run state updates refuse reserved channels (a tool Command cannot swap the prototype)", () => {
    for (const name of RESERVED) {
      const update = JSON.parse(`{${JSON.stringify(name)}: {"x": 1}}`) as Record<string, unknown>;
      expect(() => applyUpdate({ messages: [] }, update)).toThrow(expect.objectContaining({ code: "BEM-035" }));
      expect(() => mergeStepUpdates([update])).toThrow(expect.objectContaining({ code: "BEM-035" }));
    }
  });

  it("a state holding such a channel (stored before this check) still reads as plain data", () => {
    const s = emptyReplayState();
    s.channels.set("__proto__", { reducer: "last_value", value: { polluted: true } });
    s.channels.set("topic", { reducer: "last_value", value: "x" });
    const out = toThreadState("cp", 1, s);
    expect(Object.hasOwn(out.channels, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(out.channels)).toBe(Object.prototype);
    expect((out.channels as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(out.reducers, "__proto__")).toBe(true);
    expect(JSON.parse(JSON.stringify(out)).channels.topic).toBe("x");
  });
});
