import { messageText } from "../../core/message";
import type { AgentState } from "../state";
import { makeMessage } from "../state";
import { command, defineTool } from "./define";

/** Reads short-term memory through injected state; the model sees no arguments. */
export const getLastUserMessage = defineTool({
  name: "get_last_user_message",
  description: "Get the most recent user message.",
  inputSchema: { type: "object", properties: { state: { type: "object" } }, required: ["state"] },
  injected: { state: "state" },
  handler: (input) => {
    const state = input.state as AgentState;
    const last = state.messages.findLast((m) => m.role === "user");
    return last ? messageText(last.content) : "No user messages found.";
  },
});

/** Writes short-term memory: a Command sets the user_name channel and answers the call. */
export const setUserName = defineTool({
  name: "set_user_name",
  description: "Set the user's name in conversation state.",
  inputSchema: {
    type: "object",
    properties: { new_name: { type: "string", minLength: 1, maxLength: 200 }, tool_call_id: { type: "string" } },
    required: ["new_name", "tool_call_id"],
  },
  injected: { tool_call_id: "tool_call_id" },
  stateSchema: { user_name: "last_value" },
  handler: (input, runtime) => {
    const name = String(input.new_name);
    return command({
      user_name: name,
      messages: [makeMessage({ role: "tool", content: `User name set to ${name}.`, tool_call_id: String(input.tool_call_id) }, runtime)],
    });
  },
});
