import { makeMessage } from "../state";
import { command, defineTool } from "../tools/define";
import type { Middleware } from "./types";

export type Todo = { content: string; status: "pending" | "in_progress" | "completed" };

/** Replaces the whole list each call: the model always sends the full, current plan. */
export const writeTodos = defineTool({
  name: "write_todos",
  description: "Replace the task list for this conversation. Send every item with its status.",
  inputSchema: {
    type: "object",
    properties: {
      todos: {
        type: "array",
        maxItems: 100,
        items: {
          type: "object",
          properties: {
            content: { type: "string", minLength: 1, maxLength: 2000 },
            status: { type: "string", enum: ["pending", "in_progress", "completed"] },
          },
          required: ["content", "status"],
        },
      },
      tool_call_id: { type: "string" },
    },
    required: ["todos", "tool_call_id"],
  },
  injected: { tool_call_id: "tool_call_id" },
  stateSchema: { todos: "last_value" },
  handler: (input, runtime) => {
    const todos = input.todos as Todo[];
    const done = todos.filter((t) => t.status === "completed").length;
    return command({
      todos,
      messages: [
        makeMessage(
          { role: "tool", content: `Updated the todo list: ${todos.length} items, ${done} completed.`, tool_call_id: String(input.tool_call_id) },
          runtime,
        ),
      ],
    });
  },
});

/** Owns the `todos` channel (last value: one writer per step) and installs write_todos. */
export function todoList(): Middleware {
  return { name: "todo_list", stateSchema: { todos: "last_value" }, tools: [writeTodos] };
}
