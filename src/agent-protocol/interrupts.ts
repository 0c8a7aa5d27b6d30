import type { Message } from "../core/message";
import { approvalToolsOf, waitingCalls } from "../pipeline/resume";
import { middlewaresFromConfig } from "../pipeline/middleware/from-config";
import type { TurnResult } from "../pipeline/turn";
import { agents } from "../routing/bundled";
import { argsOf } from "./messages";

/**
 * A run stopped by an agent's human_in_the_loop middleware, as LangGraph reports an interrupt and Agent
 * Chat UI's approval panel reads it: one interrupt whose value lists the stopped calls (`action_requests`)
 * and what a person may decide on each (`review_configs`); `command: {resume: {decisions}}` answers it.
 */
const APPROVAL_TOOLS: readonly string[] = [...new Set(agents.flatMap((a) => approvalToolsOf(middlewaresFromConfig(a.middleware))))];

export type Interrupt = ReturnType<typeof interruptOf> & object;

/** The interrupt the thread's messages end in, if a call waits for a decision. */
export function interruptOf(messages: readonly Message[]) {
  const waiting = waitingCalls(messages, APPROVAL_TOOLS);
  const last = messages.at(-1);
  if (waiting.length === 0 || !last) return undefined;
  return {
    id: last.id,
    value: {
      action_requests: waiting.map((c) => ({
        name: c.function.name,
        args: argsOf(c.function.arguments),
        description: `Tool execution requires approval\n\nTool: ${c.function.name}\nArgs: ${c.function.arguments}`,
      })),
      review_configs: waiting.map((c) => ({ action_name: c.function.name, allowed_decisions: ["approve", "edit", "reject"] })),
    },
    when: "during",
    resumable: true,
  };
}

/** How a finished run is recorded: interrupted when its reply stopped at a call waiting for a decision. */
export const endStatus = (r: Pick<TurnResult, "reply">): "success" | "interrupted" =>
  (r.reply.tool_calls ?? []).some((c) => APPROVAL_TOOLS.includes(c.function.name)) ? "interrupted" : "success";
