import { describe, expect, it } from "vitest";
import { middlewareFromConfig, middlewaresFromConfig } from "../../../src/pipeline/middleware/from-config";
import { isOverwrite, type StateUpdate } from "../../../src/pipeline/state";
import { assistant, stateOf, testRuntime, user } from "./helpers";

describe("middlewareFromConfig", () => {
  it("builds each shipped middleware from its models.yaml entry", () => {
    const built = middlewaresFromConfig([
      { name: "trim", max_tokens: 2000, include_system: true },
      { name: "delete_old", keep: 6 },
      { name: "summarization", trigger: { tokens: 4000 }, keep: { messages: 20 }, model: "cheap" },
      { name: "dynamic_prompt", template: "You are helpful. Address the user as {{user_name}}." },
      { name: "todo_list" },
      { name: "filter_tool_noise" },
    ]);
    expect(built.map((m) => m.name)).toEqual(["trim", "delete_old", "summarization", "dynamic_prompt", "todo_list", "filter_tool_noise"]);
    expect(built[4]!.tools!.map((t) => t.name)).toEqual(["write_todos"]);
  });

  it("applies the configured settings", async () => {
    const trim = middlewareFromConfig({ name: "trim", max_tokens: 12, persist: true });
    const msgs = [user("x".repeat(100)), assistant("ok")];
    const update = (await trim.beforeModel!(stateOf(msgs), testRuntime())) as StateUpdate;
    expect(isOverwrite(update.messages) && update.messages.messages).toEqual([msgs[1]]);
    expect(middlewareFromConfig({ name: "trim", max_tokens: 12 })).toMatchObject({ viewOnly: true, windowTokens: 12 });
  });

  it.each([
    [{ name: "trim", max_tokens: -1 }, "max_tokens"],
    [{ name: "trim", max_token: 100 }, "max_token"],
    [{ name: "delete_old" }, "keep"],
    [{ name: "summarization", trigger: { fraction: 1.5 } }, "trigger"],
    [{ name: "summarization", trigger: { tokens: 10, messages: 5 } }, "trigger"],
    [{ name: "dynamic_prompt", template: "" }, "template"],
    [{ name: "mystery" }, "name"],
    ["trim", "entry"],
  ])("rejects %j with BEM-084 naming the field", (spec, field) => {
    expect(() => middlewareFromConfig(spec)).toThrow(expect.objectContaining({ code: "BEM-084", message: expect.stringContaining(field) }));
  });

  it("refuses an agent listing one middleware twice", () => {
    expect(() => middlewaresFromConfig([{ name: "todo_list" }, { name: "todo_list" }])).toThrow(
      expect.objectContaining({ code: "BEM-084", message: expect.stringContaining("twice") }),
    );
  });
});
