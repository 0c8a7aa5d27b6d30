import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { snapshot, tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";

const tenant = tenantForRuns();

type StateBody = {
  checkpoint_id: string;
  channels: Record<string, unknown> & { messages: { id: string; role: string; content: string | null; metadata?: Record<string, unknown> }[] };
};
type HistoryBody = { checkpoints: { id: string; parent_id: string | null; source: string; is_head: boolean }[] };
const state = async (thread: string, checkpoint?: string) =>
  (await (await api(`/v1/threads/${thread}/state${checkpoint ? `?checkpoint_id=${checkpoint}` : ""}`, { key: tenant().adminKey })).json()) as StateBody;
const history = async (thread: string) => (await (await api(`/v1/threads/${thread}/history?limit=100`, { key: tenant().adminKey })).json()) as HistoryBody;
const chat = (body: Record<string, unknown>) => api("/v1/chat/completions", { key: tenant().adminKey, body });

describe("agent runs with middleware and server tools", () => {
  it("runs server tools with injected fields hidden from the model; a Command writes a channel; the prompt comes from context", async () => {
    const fake = fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_a", name: "set_user_name", arguments: { new_name: "Ada" } }] })
      .reply("Noted, Ada.");
    const thread = uniqueThread();
    const res = await chat({
      model: "gpt-4o-mini",
      agent: "planner",
      thread_id: thread,
      context: { user_name: "Bob" },
      messages: [{ role: "user", content: "Call me Ada." }],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toBe("Noted, Ada.");

    type WireTool = { function: { name: string; parameters: { properties: Record<string, unknown>; required?: string[] } } };
    const tools = (fake.calls[0]!.body as { tools: WireTool[] }).tools;
    const byName = new Map(tools.map((x) => [x.function.name, x.function.parameters]));
    expect([...byName.keys()].sort()).toEqual(["get_last_user_message", "set_user_name", "write_todos"]);
    expect(Object.keys(byName.get("set_user_name")!.properties)).toEqual(["new_name"]);
    expect(byName.get("set_user_name")!.required).toEqual(["new_name"]);
    expect(Object.keys(byName.get("get_last_user_message")!.properties)).toEqual([]);

    const first = wireMessages(fake.calls[0]!.body);
    expect(wireText(first[0]!)).toBe("You plan work step by step for Bob. Keep the todo list current.");
    const second = wireMessages(fake.calls[1]!.body);
    expect(second.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(wireText(second[3]!)).toBe("User name set to Ada.");

    const s = await state(thread);
    expect(s.channels.user_name).toBe("Ada");
    expect(s.channels.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    const h = await history(thread);
    expect(h.checkpoints.map((c) => c.source)).toEqual(["loop", "input"]);
  });

  it("rejects a run whose context fails the agent's schema (BEM-083) and stores nothing", async () => {
    const fake = fakeOpenAI();
    const thread = uniqueThread();
    const res = await chat({
      model: "gpt-4o-mini",
      agent: "planner",
      thread_id: thread,
      context: { user_name: "" },
      messages: [{ role: "user", content: "hi" }],
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-083");
    expect(fake.calls).toHaveLength(0);
    expect((await snapshot(tenant().adminKey, thread)).status).toBe(404);

    // Not an object at all: the request schema refuses it before any run (the run sees only parsed records).
    const list = await chat({ model: "gpt-4o-mini", agent: "planner", thread_id: thread, context: [], messages: [{ role: "user", content: "hi" }] });
    expect(list.status).toBe(400);
    expect(((await list.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "BEM-011",
      message: expect.stringContaining("context"),
    });
    expect(fake.calls).toHaveLength(0);
    expect((await snapshot(tenant().adminKey, thread)).status).toBe(404);
  });

  it("stops at remaining_steps with BEM-081 and keeps the complete steps", async () => {
    fakeOpenAI().otherwise({ tool_calls: [{ name: "get_last_user_message", arguments: {} }] });
    const thread = uniqueThread();
    const res = await chat({
      model: "gpt-4o-mini",
      agent: "planner",
      thread_id: thread,
      context: { user_name: "Bob" },
      messages: [{ role: "user", content: "loop forever" }],
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-081");
    const s = await state(thread);
    // input + 8 × (assistant call + tool result), every call answered
    expect(s.channels.messages).toHaveLength(1 + 8 * 2);
    expect(s.channels.messages.at(-1)!.role).toBe("tool");
  });

  it("summarizes older turns at the threshold, not before, and the checkpoint before it still holds them", async () => {
    const thread = uniqueThread();
    const turn = (text: string) => chat({ model: "auto", agent: "long-chat", thread_id: thread, messages: [{ role: "user", content: text }] });
    for (const text of ["one", "two", "three"]) expect((await turn(text)).status).toBe(200);
    const before = await state(thread);
    expect(before.channels.messages).toHaveLength(6);
    expect(before.channels.messages.some((m) => m.metadata?.summary_of !== undefined)).toBe(false);

    expect((await turn("four")).status).toBe(200); // 7 messages before the model call: still under 8
    expect((await turn("five")).status).toBe(200); // 9 before the call: summarize
    const after = await state(thread);
    const summary = after.channels.messages[0]!;
    expect(summary.role).toBe("user"); // a labelled summary, not a system message (issue 11, finding 11)
    expect(summary.metadata?.summary_of).toMatchObject({ count: expect.any(Number) });
    expect(after.channels.messages.slice(1).map((m) => m.content)).not.toContain("one");
    expect(after.channels.messages.length).toBeLessThan(10);
    expect(after.channels.messages.at(-2)!.content).toBe("five");

    // Reversible: the previous checkpoint's state still has every original message.
    const h = await history(thread);
    const previousTurn = h.checkpoints[1]!.id;
    const old = await state(thread, previousTurn);
    expect(old.channels.messages.map((m) => m.content).filter((c) => c !== null && !c.startsWith("Echo"))).toEqual(["one", "two", "three", "four"]);
  });
});

describe("time travel", () => {
  it("continues from an old checkpoint as a new branch; both branches stay readable and can go on", async () => {
    const thread = uniqueThread();
    const turn = (text: string, checkpoint_id?: string) =>
      chat({ model: "auto", thread_id: thread, messages: [{ role: "user", content: text }], ...(checkpoint_id ? { checkpoint_id } : {}) });
    const c1 = ((await (await turn("first")).json()) as { edgeweave: { checkpoint_id: string } }).edgeweave.checkpoint_id;
    const c2 = ((await (await turn("second on main")).json()) as { edgeweave: { checkpoint_id: string } }).edgeweave.checkpoint_id;

    const forked = await turn("second on the branch", c1);
    expect(forked.status).toBe(200);
    const head = await state(thread);
    expect(head.channels.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["first", "second on the branch"]);

    // The old branch is intact and can itself be continued.
    const oldBranch = await state(thread, c2);
    expect(oldBranch.channels.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["first", "second on main"]);
    expect((await turn("third on main", c2)).status).toBe(200);
    const again = await state(thread);
    expect(again.channels.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["first", "second on main", "third on main"]);

    const h = await history(thread);
    expect(h.checkpoints.filter((c) => c.source === "fork")).toHaveLength(2);
    expect(h.checkpoints.filter((c) => c.is_head)).toHaveLength(1);
  });

  it("an unknown checkpoint is a coded 404 and nothing changes", async () => {
    const thread = uniqueThread();
    await chat({ model: "auto", thread_id: thread, messages: [{ role: "user", content: "x" }] });
    const before = await snapshot(tenant().adminKey, thread);
    const res = await chat({ model: "auto", thread_id: thread, checkpoint_id: "nope000", messages: [{ role: "user", content: "y" }] });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-032");
    expect(await snapshot(tenant().adminKey, thread)).toEqual(before);
  });
});
