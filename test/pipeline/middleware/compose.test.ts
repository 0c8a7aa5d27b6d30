import { describe, expect, it } from "vitest";
import {
  collectReducers,
  middlewareTools,
  prepareModelRequest,
  runAfterModel,
  runBeforeModel,
  validateTurnContext,
} from "../../../src/pipeline/middleware/compose";
import { dynamicPrompt, promptTemplate } from "../../../src/pipeline/middleware/dynamic-prompt";
import { filterToolNoise } from "../../../src/pipeline/middleware/filter-tool-noise";
import { todoList } from "../../../src/pipeline/middleware/todo-list";
import type { Middleware } from "../../../src/pipeline/middleware/types";
import { remove } from "../../../src/pipeline/state";
import { setUserName } from "../../../src/pipeline/tools/builtin";
import { assistant, call, stateOf, testRuntime, toolResult, user } from "./helpers";
import { checkToolPairs } from "../../support/tool-pairs-oracle";
import { modelMessages } from "../../support/model-messages";

const codeOf = async (p: unknown) => {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return "no error";
};

describe("runBeforeModel / runAfterModel", () => {
  const recorder = (name: string, seen: string[]): Middleware => ({
    name,
    stateSchema: { trail: "append" },
    beforeModel: (s) => {
      seen.push(`${name}:before:${(s.trail as string[] | undefined)?.join(",") ?? ""}`);
      return { trail: [name] };
    },
    afterModel: async () => {
      seen.push(`${name}:after`);
    },
  });

  it("applies each hook's update in order, records them, and runs after hooks in reverse", async () => {
    const seen: string[] = [];
    const mws = [recorder("a", seen), recorder("b", seen)];
    const before = await runBeforeModel(mws, stateOf([]), testRuntime());
    expect(seen).toEqual(["a:before:", "b:before:a"]);
    expect(before.state.trail).toEqual(["a", "b"]);
    expect(before.updates).toEqual([
      { middleware: "a", hook: "before_model", update: { trail: ["a"] } },
      { middleware: "b", hook: "before_model", update: { trail: ["b"] } },
    ]);
    const after = await runAfterModel(mws, before.state, testRuntime());
    expect(seen.slice(2)).toEqual(["b:after", "a:after"]);
    expect(after.updates).toEqual([]);
  });

  it("stops at a hook's invalid update with the thread's error code", async () => {
    const bad: Middleware = { name: "bad", beforeModel: () => ({ messages: [remove("missing")] }) };
    expect(await codeOf(runBeforeModel([bad], stateOf([]), testRuntime()))).toBe("BEM-031");
  });
});

describe("collectReducers / middlewareTools", () => {
  it("gathers channels of middleware and their tools; clashing reducers are a config error", () => {
    expect(collectReducers([todoList()], [setUserName])).toEqual({ todos: "last_value", user_name: "last_value" });
    const clash: Middleware = { name: "other", stateSchema: { todos: "append" } };
    expect(() => collectReducers([todoList(), clash])).toThrow(expect.objectContaining({ code: "BEM-084" }));
  });

  it("lists installed tools first and refuses duplicate names", () => {
    expect(middlewareTools([todoList()], [setUserName]).map((t) => t.name)).toEqual(["write_todos", "set_user_name"]);
    expect(() => middlewareTools([todoList(), todoList()])).toThrow(expect.objectContaining({ code: "BEM-084" }));
  });
});

describe("dynamic prompt", () => {
  it("sets the system prompt of the model call from state and context, without touching state", async () => {
    const mw = dynamicPrompt((state, rt) => `Helpful. User: ${String(rt.context.user_name)}; ${state.messages.length} messages.`);
    const state = stateOf([user("hi")]);
    const runtime = testRuntime({ context: { user_name: "Ada" } });
    const before = await runBeforeModel([mw], state, runtime);
    expect(before.updates).toEqual([]);
    const request = prepareModelRequest([mw], state, runtime, { system: "static prompt" });
    expect(request.system).toBe("Helpful. User: Ada; 1 messages.");
    const sent = modelMessages(request, runtime);
    expect(sent.map((m) => [m.role, m.content])).toEqual([
      ["system", "Helpful. User: Ada; 1 messages."],
      ["user", "hi"],
    ]);
  });

  it("leaves the agent's prompt alone without the middleware (no-op case)", () => {
    const request = prepareModelRequest([], stateOf([user("hi")]), testRuntime(), { system: "static prompt" });
    expect(request.system).toBe("static prompt");
  });

  it("fills a template from context and state", () => {
    const mw = promptTemplate("You are helpful. Address the user as {{user_name}}. Known as {{ state.user_name }}.");
    const request = prepareModelRequest([mw], stateOf([], { user_name: "Bob" }), testRuntime({ context: { user_name: "Ann" } }), { system: null });
    expect(request.system).toBe("You are helpful. Address the user as Ann. Known as Bob.");
  });

  it("validates the run context against the template's fields (BEM-083)", () => {
    const mw = promptTemplate("Address the user as {{user_name}}.");
    expect(validateTurnContext([mw], { user_name: "Ann", extra: 1 })).toEqual({ user_name: "Ann", extra: 1 });
    expect(() => validateTurnContext([mw], {})).toThrow(expect.objectContaining({ code: "BEM-083", message: expect.stringContaining("context.user_name") }));
    expect(() => validateTurnContext([mw], { user_name: { nested: true } })).toThrow(expect.objectContaining({ code: "BEM-083" }));
  });

  it("rejects a malformed placeholder at configuration time", () => {
    expect(() => promptTemplate("Hello {{user name}}")).toThrow(expect.objectContaining({ code: "BEM-084" }));
  });
});

describe("filterToolNoise (custom middleware example)", () => {
  it("drops ephemeral tool results and the calls that asked for them", async () => {
    const a = assistant(null, [call("keep"), call("noise")], "a1");
    const kept = toolResult("keep", "useful");
    const noisy = toolResult("noise", "progress 50%", { metadata: { ephemeral: true } });
    const msgs = [user("go", "u1"), a, kept, noisy, assistant("done", undefined, "a2")];
    const run = await runBeforeModel([filterToolNoise], stateOf(msgs), testRuntime());
    expect(run.state.messages.map((m) => m.id)).toEqual(["u1", "a1", kept.id, "a2"]);
    expect(run.state.messages[1]!.tool_calls!.map((c) => c.id)).toEqual(["keep"]);
    expect(checkToolPairs(run.state.messages, "anthropic")).toEqual([]);
  });

  it("is a no-op without ephemeral results", async () => {
    const msgs = [user("go"), assistant(null, [call("k")]), toolResult("k", "x", { metadata: { ephemeral: false } })];
    expect(await filterToolNoise.beforeModel!(stateOf(msgs), testRuntime())).toBeUndefined();
  });
});
