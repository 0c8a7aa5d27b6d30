import { describe, expect, it } from "vitest";
import { collectReducers } from "../../../src/pipeline/middleware/compose";
import { checkToolPairs } from "../../support/tool-pairs-oracle";
import { todoList } from "../../../src/pipeline/middleware/todo-list";
import { getLastUserMessage, setUserName } from "../../../src/pipeline/tools/builtin";
import { command, defineTool, modelVisibleSchema, toolDefinitions } from "../../../src/pipeline/tools/define";
import { executeToolCalls } from "../../../src/pipeline/tools/execute";
import type { Message } from "../../../src/core/message";
import { assistant, call, stateOf, testRuntime, user } from "../middleware/helpers";

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return "no error";
};

const addNote = defineTool({
  name: "add_note",
  description: "Adds a note.",
  inputSchema: { type: "object", properties: { text: { type: "string" }, priority: { type: "integer", enum: [1, 2, 3] } }, required: ["text"] },
  stateSchema: { notes: "append" },
  handler: (input) => command({ notes: [input.text] }),
});

describe("tool declarations", () => {
  it("hides injected fields from the schema the model sees", () => {
    expect(modelVisibleSchema(setUserName)).toEqual({
      type: "object",
      properties: { new_name: { type: "string", minLength: 1, maxLength: 200 } },
      required: ["new_name"],
    });
    expect(modelVisibleSchema(getLastUserMessage)).toEqual({ type: "object", properties: {}, required: [] });
    expect(toolDefinitions([getLastUserMessage])[0]).toEqual({
      type: "function",
      function: {
        name: "get_last_user_message",
        description: "Get the most recent user message.",
        parameters: { type: "object", properties: {}, required: [] },
      },
    });
  });

  it("refuses a bad declaration (BEM-084)", () => {
    const base = { description: "x", handler: () => "x" };
    expect(() => defineTool({ ...base, name: "bad name!", inputSchema: { type: "object" } })).toThrow(expect.objectContaining({ code: "BEM-084" }));
    expect(() => defineTool({ ...base, name: "ok", inputSchema: { type: "array" } as never })).toThrow(expect.objectContaining({ code: "BEM-084" }));
  });
});

describe("executeToolCalls", () => {
  it("injects state: get_last_user_message reads the conversation", async () => {
    const c = call("c1", "get_last_user_message");
    const state = stateOf([user("My name is Bob", "u1"), user("What is my name?", "u2"), assistant(null, [c], "a1")]);
    const { state: next, errors } = await executeToolCalls([c], [getLastUserMessage], state, testRuntime());
    expect(errors).toEqual([]);
    expect(next.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1", name: "get_last_user_message", content: "What is my name?" });
  });

  it("applies a Command: set_user_name writes the user_name channel and answers its own call", async () => {
    const c = call("c1", "set_user_name", JSON.stringify({ new_name: "Ada" }));
    const state = stateOf([user("call me Ada"), assistant(null, [c])]);
    const { state: next, update } = await executeToolCalls([c], [setUserName], state, testRuntime(), collectReducers([], [setUserName]));
    expect(next.user_name).toBe("Ada");
    const replies = next.messages.filter((m) => m.role === "tool");
    expect(replies).toEqual([expect.objectContaining({ tool_call_id: "c1", content: "User name set to Ada." })]);
    expect(update).toMatchObject({ user_name: "Ada" });
    expect(checkToolPairs(next.messages, "anthropic")).toEqual([]);
  });

  it("the model cannot override an injected field", async () => {
    const c = call("real-id", "set_user_name", JSON.stringify({ new_name: "Eve", tool_call_id: "forged" }));
    const { state } = await executeToolCalls([c], [setUserName], stateOf([assistant(null, [c])]), testRuntime());
    expect(state.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["real-id"]);
  });

  it("merges parallel Command updates through the channel reducers, in call order", async () => {
    const calls = [call("n1", "add_note", '{"text":"first"}'), call("n2", "add_note", '{"text":"second"}')];
    const state = stateOf([assistant(null, calls)], { notes: ["zero"] });
    const { state: next } = await executeToolCalls(calls, [addNote], state, testRuntime(), collectReducers([], [addNote]));
    expect(next.notes).toEqual(["zero", "first", "second"]);
    // a Command without its own reply still answers the call
    expect(next.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["n1", "n2"]);
  });

  it("conflicting last-value writes in one step are BEM-082", async () => {
    const calls = [call("a", "set_user_name", '{"new_name":"Ann"}'), call("b", "set_user_name", '{"new_name":"Bob"}')];
    expect(await codeOf(executeToolCalls(calls, [setUserName], stateOf([assistant(null, calls)]), testRuntime()))).toBe("BEM-082");
    const todos = todoList();
    const t = [call("t1", "write_todos", '{"todos":[]}'), call("t2", "write_todos", '{"todos":[{"content":"x","status":"pending"}]}')];
    expect(await codeOf(executeToolCalls(t, todos.tools!, stateOf([assistant(null, t)]), testRuntime(), collectReducers([todos])))).toBe("BEM-082");
  });

  it("runs a step's calls in parallel", async () => {
    let running = 0;
    let peak = 0;
    const slow = defineTool({
      name: "slow",
      description: "waits",
      inputSchema: { type: "object" },
      handler: async () => {
        peak = Math.max(peak, ++running);
        await new Promise((r) => setTimeout(r, 10));
        running--;
        return "ok";
      },
    });
    const calls = [call("s1", "slow"), call("s2", "slow"), call("s3", "slow")];
    await executeToolCalls(calls, [slow], stateOf([assistant(null, calls)]), testRuntime());
    expect(peak).toBe(3);
  });

  it("answers unknown tools, bad JSON, schema failures and handler errors with error tool messages", async () => {
    const boom = defineTool({
      name: "boom",
      description: "fails",
      inputSchema: { type: "object" },
      handler: () => {
        throw new Error("db password is hunter2");
      },
    });
    const calls = [
      call("u", "no_such_tool"),
      call("j", "add_note", "{not json"),
      call("s", "add_note", '{"text": 5}'),
      call("e", "add_note", '{"text": "x", "priority": 7}'),
      call("b", "boom"),
    ];
    const state = stateOf([assistant(null, calls)]);
    const { state: next, errors } = await executeToolCalls(calls, [addNote, boom], state, testRuntime());
    const replies = new Map(next.messages.filter((m) => m.role === "tool").map((m): [string, Message] => [m.tool_call_id!, m]));
    expect(errors.map((e) => e.tool_call_id)).toEqual(["u", "j", "s", "e", "b"]);
    expect(replies.get("u")!.content).toMatch(/^Error: unknown tool 'no_such_tool'. Available tools: add_note, boom/);
    expect(replies.get("j")!.content).toMatch(/not valid JSON/);
    expect(replies.get("s")!.content).toMatch(/invalid arguments for 'add_note': text:/);
    expect(replies.get("e")!.content).toMatch(/priority/);
    expect(replies.get("b")!.content).toBe("Error: 'boom' failed.");
    expect(JSON.stringify(next.messages)).not.toContain("hunter2");
    for (const m of replies.values()) expect(m.metadata).toEqual({ error: "BEM-080" });
    expect(next.notes).toBeUndefined();
  });
});
