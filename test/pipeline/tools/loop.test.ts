import { describe, expect, it } from "vitest";
import { collectReducers, runAfterModel, runBeforeModel } from "../../../src/pipeline/middleware/compose";
import { checkToolPairs } from "../../support/tool-pairs-oracle";
import { todoList } from "../../../src/pipeline/middleware/todo-list";
import { applyUpdate, type AgentState } from "../../../src/pipeline/state";
import { getLastUserMessage, setUserName } from "../../../src/pipeline/tools/builtin";
import { runToolLoop, StepsExhaustedError, type ModelTurn } from "../../../src/pipeline/tools/loop";
import type { Message, ToolCall } from "../../../src/core/message";
import { assistant, call, stateOf, testRuntime, user } from "../middleware/helpers";

/** A scripted model: each call returns the next reply. */
function scripted(replies: ((state: AgentState) => Message)[]) {
  const seen: AgentState[] = [];
  return {
    seen,
    callModel: async (state: AgentState): Promise<ModelTurn> => {
      seen.push(state);
      const next = replies[seen.length - 1];
      if (!next) throw new Error("model called too often");
      return next(state);
    },
  };
}
const wants =
  (id: string, ...calls: ToolCall[]) =>
  () =>
    assistant(null, calls, id);
const says = (id: string, text: string) => () => assistant(text, undefined, id);

describe("runToolLoop", () => {
  it("runs model → tools → model until the model stops calling tools", async () => {
    const model = scripted([
      wants("a1", call("c1", "set_user_name", '{"new_name":"Bob"}')),
      wants("a2", call("c2", "get_last_user_message")),
      (s) => assistant(`Hi ${String(s.user_name)}`, undefined, "a3"),
    ]);
    const tools = [setUserName, getLastUserMessage];
    const steps: number[] = [];
    const result = await runToolLoop({
      callModel: model.callModel,
      tools,
      state: stateOf([user("I'm Bob", "u1")]),
      runtime: testRuntime(),
      maxSteps: 5,
      reducers: collectReducers([], tools),
      onStep: (step) => void steps.push(step.index),
    });
    expect(result.state.messages.map((m) => m.id)).toEqual(["u1", "a1", expect.any(String), "a2", expect.any(String), "a3"]);
    expect(result.state.messages.at(-1)!.content).toBe("Hi Bob");
    expect(result.state.messages[4]!.content).toBe("I'm Bob");
    expect(result.steps.map((s) => s.writes.map((w) => w.source))).toEqual([["model", "tools"], ["model", "tools"], ["model"]]);
    expect(steps).toEqual([0, 1, 2]);
    expect(result.pendingToolCalls).toEqual([]);
  });

  it("remaining_steps exhausted → BEM-081 carrying the state of the last complete step", async () => {
    const loopForever = Array.from({ length: 3 }, (_, i) => wants(`a${i}`, call(`c${i}`, "get_last_user_message")));
    const model = scripted(loopForever);
    const err = await runToolLoop({
      callModel: model.callModel,
      tools: [getLastUserMessage],
      state: stateOf([user("hello", "u1")]),
      runtime: testRuntime(),
      maxSteps: 2,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StepsExhaustedError);
    const e = err as StepsExhaustedError;
    expect(e.code).toBe("BEM-081");
    expect(e.status).toBe(422);
    expect(model.seen).toHaveLength(2);
    expect(e.steps).toHaveLength(2);
    // both steps completed: each call answered, nothing dangling
    expect(e.state.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    expect(checkToolPairs(e.state.messages, "anthropic")).toEqual([]);
  });

  it("stops with pending calls when the model calls a client-side tool", async () => {
    const model = scripted([wants("a1", call("c1", "get_last_user_message"), call("c2", "browser_open", '{"url":"x"}'))]);
    const result = await runToolLoop({
      callModel: model.callModel,
      tools: [getLastUserMessage],
      state: stateOf([user("open it", "u1")]),
      runtime: testRuntime(),
      maxSteps: 3,
      clientTools: ["browser_open"],
    });
    expect(result.pendingToolCalls.map((c) => c.id)).toEqual(["c2"]);
    expect(result.state.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["c1"]);
  });

  it("accepts a model turn that already ran middleware, and a todo tool the middleware installed", async () => {
    const todos = todoList();
    const mws = [todos];
    const reducers = collectReducers(mws);
    const runtime = testRuntime();
    const replies = [
      wants("a1", call("t1", "write_todos", JSON.stringify({ todos: [{ content: "write tests", status: "in_progress" }] }))),
      says("a2", "planned"),
    ];
    let i = 0;
    const result = await runToolLoop({
      callModel: async (state) => {
        const before = await runBeforeModel(mws, state, runtime, reducers);
        const reply = replies[i++]!();
        const withReply = applyUpdate(before.state, { messages: [reply] }, reducers);
        const after = await runAfterModel(mws, withReply, runtime, reducers);
        return { state: after.state, writes: [{ source: "model", update: { messages: [reply] } }] };
      },
      tools: todos.tools!,
      state: stateOf([user("plan it")]),
      runtime,
      maxSteps: 4,
      reducers,
    });
    expect(result.state.todos).toEqual([{ content: "write tests", status: "in_progress" }]);
    expect(result.state.messages.at(-1)!.content).toBe("planned");
  });

  it("rejects a non-positive step budget", async () => {
    const model = scripted([says("a", "x")]);
    await expect(runToolLoop({ callModel: model.callModel, tools: [], state: stateOf([]), runtime: testRuntime(), maxSteps: 0 })).rejects.toMatchObject({
      code: "BEM-081",
    });
  });
});
